// lua.go's model: each script's SHA1 and its Lua source.

package codegen

import (
	"fmt"
	"strings"
)

// luaFile is lua.go.
type luaFile struct {
	Scripts []luaSource
}

// luaSource is one script's <Script>SHA1 and <script>Source constants.
type luaSource struct {
	SHA1      constDef
	SourceDoc comment
	Source    string // the constant's name
	Text      string // the Lua
	Raw       bool   // written as a raw string literal, for readable diffs of the Lua
}

func (b *modelBuilder) luaFile() luaFile {
	var f luaFile
	for _, s := range b.scripts {
		base, lname := exported(s.Spec.Name), unexported(s.Spec.Name)
		sourceDoc := line(fmt.Sprintf("%sSource is lua/%s.", lname, s.Spec.LuaFile()))
		if len(s.Includes) > 0 {
			sourceDoc = wrapped(fmt.Sprintf("%sSource is lua/%s with what it includes (lua/%s) in place of its @include lines: the one script Redis runs.", lname, s.Spec.LuaFile(), strings.Join(s.Includes, ", lua/")))
		}
		f.Scripts = append(f.Scripts, luaSource{
			SHA1:      constDef{Doc: wrapped(fmt.Sprintf("%sSHA1 is the SHA1 of lua/%s, the name EVALSHA calls it by.", base, s.Spec.LuaFile())), Name: base + "SHA1", Value: strLit(s.SHA1)},
			SourceDoc: sourceDoc,
			Source:    lname + "Source",
			Text:      s.Source,
			Raw:       !strings.ContainsAny(s.Source, "`\r"),
		})
		b.decls.add(fileLua, base+"SHA1", lname+"Source")
	}
	return f
}
