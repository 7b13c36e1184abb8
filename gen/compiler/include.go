package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
)

// RuleInclude: an include directive luagen cannot follow (a file outside
// the Lua directory, a cycle, a file that does not exist or is no script
// text).
const RuleInclude = "include"

// includeRe is the include directive: a line `--- @include "name"`, the form
// BullMQ's scripts use, so that script families sharing helpers come in as
// their authors wrote them. A directive is a comment to Redis's Lua; luagen
// replaces it by the named file before anything reads the script.
var includeRe = regexp.MustCompile(`^[ \t]*---[ \t]*@include[ \t]+"([^"]*)"[ \t]*\r?$`)

// flattened is a script with its includes replaced by their text: what
// Redis runs, what the SHA1 and the functions library are made of.
type flattened struct {
	src []byte
	// origins is, for each line of src (origins[i] for line i+1), the file
	// under the Lua directory and line it comes from.
	origins []keyspec.Pos
	// files are the files included, relative to the Lua directory.
	files []string
}

// flatten replaces every include directive of file (relative to the Lua
// directory, display its name in messages) by the file it names, resolved
// relative to the including file's directory, ".lua" appended when the name
// has no extension. Each file is included once per script: a second
// directive for it becomes an empty line. A name that leaves the Lua
// directory, a cycle, a missing, oversized or non-text file, and an included
// file with a shebang are refused at the directive's line.
func flatten(lua fs.FS, luaDir, file string, src []byte) (*flattened, []Problem) {
	f := &flattener{lua: lua, luaDir: luaDir, seen: map[string]bool{}}
	f.walk(file, src, []string{file})
	if len(f.errs) > 0 {
		return nil, f.errs
	}
	if f.out.Len() > MaxScriptBytes {
		return nil, []Problem{{Rule: RuleInclude, Err: &keyspec.Error{Pos: keyspec.Pos{File: path.Join(luaDir, file), Line: 1}, Msg: fmt.Sprintf("%d bytes with its includes, over luagen's cap of %d for one script (a script runs atomically: keep it small)", f.out.Len(), MaxScriptBytes)}}}
	}
	return &flattened{src: f.out.Bytes(), origins: f.origins, files: f.files}, nil
}

type flattener struct {
	lua     fs.FS
	luaDir  string
	out     bytes.Buffer
	origins []keyspec.Pos
	seen    map[string]bool
	files   []string
	errs    []Problem
}

func (f *flattener) fail(file string, line int, format string, a ...any) {
	f.errs = append(f.errs, Problem{Rule: RuleInclude, Err: &keyspec.Error{Pos: keyspec.Pos{File: path.Join(f.luaDir, file), Line: line}, Msg: fmt.Sprintf(format, a...)}})
}

// walk writes src, the text of file, with its includes; stack holds the
// files being included, outermost first.
func (f *flattener) walk(file string, src []byte, stack []string) {
	lines := bytes.SplitAfter(src, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, line := range lines {
		m := includeRe.FindSubmatch(bytes.TrimSuffix(line, []byte("\n")))
		if m == nil {
			f.write(line, keyspec.Pos{File: path.Join(f.luaDir, file), Line: i + 1})
			continue
		}
		target, why := resolveInclude(file, string(m[1]))
		if why != "" {
			f.fail(file, i+1, "@include %q: %s", m[1], why)
			continue
		}
		for _, s := range stack {
			if s == target {
				f.fail(file, i+1, "@include %q: an include cycle (%s -> %s)", m[1], strings.Join(stack, " -> "), target)
				target = ""
				break
			}
		}
		if target == "" {
			continue
		}
		if f.seen[target] {
			f.write([]byte("\n"), keyspec.Pos{File: path.Join(f.luaDir, file), Line: i + 1}) // included once already
			continue
		}
		body, why := f.read(target)
		if why != "" {
			f.fail(file, i+1, "@include %q: %s", m[1], why)
			continue
		}
		f.seen[target] = true
		f.files = append(f.files, target)
		f.walk(target, body, append(stack, target))
		if b := f.out.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' {
			f.out.WriteByte('\n')
		}
	}
}

// write appends one line (with its newline, if it has one) that comes from at.
func (f *flattener) write(line []byte, at keyspec.Pos) {
	f.out.Write(line)
	f.origins = append(f.origins, at)
}

// resolveInclude is the file an include of name in file names, relative to
// the Lua directory, or why it names none.
func resolveInclude(file, name string) (string, string) {
	switch {
	case name == "":
		return "", "an empty name"
	case path.IsAbs(name) || strings.HasPrefix(name, "\\"):
		return "", "an absolute path: an include names a file under the Lua directory, relative to the including script"
	case strings.ContainsAny(name, "\\\x00"):
		return "", "a name with a backslash or NUL: use '/' between directories"
	}
	if path.Ext(name) == "" {
		name += ".lua"
	}
	if path.Ext(name) != ".lua" {
		return "", "not a .lua file"
	}
	target := path.Join(path.Dir(file), name)
	if target == ".." || strings.HasPrefix(target, "../") {
		return "", "outside the Lua directory: an include names a file under it (the generated Go embeds what it includes)"
	}
	return target, ""
}

// read reads an included file as Check reads a script, or says why not.
func (f *flattener) read(target string) ([]byte, string) {
	if why := outOfTree(f.lua, target); why != "" {
		return nil, why
	}
	b, err := fs.ReadFile(f.lua, target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, path.Join(f.luaDir, target) + ": file not found"
	case err != nil:
		return nil, fmt.Sprintf("cannot read %s: %v", path.Join(f.luaDir, target), err)
	case len(b) > MaxScriptBytes:
		return nil, fmt.Sprintf("%s: %d bytes, over luagen's cap of %d", path.Join(f.luaDir, target), len(b), MaxScriptBytes)
	case bytes.HasPrefix(b, []byte("#!")):
		return nil, fmt.Sprintf("%s starts with a shebang: an included file is Lua for the middle of a script; flags belong to the including script's first line", path.Join(f.luaDir, target))
	}
	if line, what := badText(b); what != "" {
		return nil, fmt.Sprintf("%s:%d: %s", path.Join(f.luaDir, target), line, what)
	}
	return b, ""
}

// origin maps a position in the flattened script (File is its display name)
// to the file and line it comes from; other positions are returned as they are.
func (fl *flattened) origin(display string, at keyspec.Pos) keyspec.Pos {
	if fl == nil || at.File != display || at.Line < 1 || at.Line > len(fl.origins) {
		return at
	}
	return fl.origins[at.Line-1]
}

// Position is where line of the script's flattened source (Src) comes from:
// the script's own file, or a file it includes.
func (src *Source) Position(line int) keyspec.Pos {
	at := keyspec.Pos{File: src.Info.File, Line: line}
	return src.flat.origin(src.Info.File, at)
}

// Includes lists the files the script includes, relative to the Lua directory.
func (src *Source) Includes() []string {
	if src.flat == nil {
		return nil
	}
	return src.flat.files
}

// remap moves every problem at a line of the flattened script to the file and
// line it comes from.
func remap(fl *flattened, display string, problems []Problem) {
	for i := range problems {
		if e := problems[i].Err; e != nil {
			e.Pos = fl.origin(display, e.Pos)
		}
	}
}
