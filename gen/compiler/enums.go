package compiler

import (
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
)

// maxEnumExpansion bounds the names one built string expands to.
const maxEnumExpansion = 64

// expandEnums rewrites the reading of a script with ARGV of type enum: the
// wrapper sends only the enum's values, so an argument that is such an ARGV,
// or a string built with one (KEYS[1] .. ARGV[i]), is each of those values;
// a command named by one is a choice of literals, each checked and granted
// as the reader's own choices are. It runs before the checks.
func expandEnums(s *keyspec.Script, info *luascript.Info) {
	if !hasEnumArgs(s) {
		return
	}
	var calls []luascript.Call
	for _, c := range info.Calls {
		for i := range c.Args {
			a := &c.Args[i]
			alts, changed := expandAlts(s, a.Alts)
			if !changed {
				continue
			}
			args := append([]luascript.Arg(nil), c.Args...)
			args[i].Alts = alts
			if args[i].Kind == luascript.ArgArgv {
				args[i].Kind, args[i].Argv = luascript.ArgOther, 0
			}
			c.Args = args
		}
		if c.Command == "" && len(c.Args) > 0 && literalsOnly(c.Args[0].Alts) {
			var choice []string
			for _, alt := range c.Args[0].Alts {
				lit, _ := alt.Literal()
				choice = append(choice, strings.ToLower(lit))
			}
			for _, alt := range c.Args[0].Alts {
				lit, _ := alt.Literal()
				cc := c
				cc.Args = append([]luascript.Arg(nil), c.Args...)
				cc.Args[0] = luascript.Arg{Kind: luascript.ArgString, Text: lit, Alts: []luascript.Str{alt}, Desc: c.Args[0].Desc}
				cc.Command = strings.ToLower(lit)
				if len(choice) > 1 {
					cc.Choice = choice
				}
				calls = append(calls, cc)
			}
			continue
		}
		calls = append(calls, c)
	}
	info.Calls = calls
}

func hasEnumArgs(s *keyspec.Script) bool {
	for _, a := range s.Argv {
		if a.Enum != nil {
			return true
		}
	}
	return false
}

func literalsOnly(alts []luascript.Str) bool {
	for _, alt := range alts {
		if _, ok := alt.Literal(); !ok {
			return false
		}
	}
	return len(alts) > 0
}

// enumValues are the values an ARGV part may hold when the wrapper sends only
// an enum's: ARGV[n] of type enum, or ARGV[i] with i not known (from a loop
// from its least position on) where every ARGV it may be is of one enum.
func enumValues(s *keyspec.Script, p luascript.Part) []string {
	if p.Kind != luascript.PartArgv {
		return nil
	}
	if p.N > 0 {
		if a := s.ArgAt(p.N); a != nil && a.Enum != nil {
			return a.Enum.Values
		}
		return nil
	}
	least := max(int(p.Min), 1)
	if least > len(s.Argv) {
		return nil
	}
	var e *keyspec.Enum
	for _, a := range s.Argv[least-1:] {
		if a.Enum == nil || e != nil && a.Enum != e {
			return nil
		}
		e = a.Enum
	}
	return e.Values
}

// expandAlts replaces each alternative holding enum ARGV parts by one per
// combination of their values (at most maxEnumExpansion; beyond, it is left as
// it is, and the checks refuse what they cannot prove).
func expandAlts(s *keyspec.Script, alts []luascript.Str) ([]luascript.Str, bool) {
	var out []luascript.Str
	changed := false
	for _, alt := range alts {
		ex := []luascript.Str{{Via: alt.Via}}
		hit := false
		for _, p := range alt.Parts {
			vals := enumValues(s, p)
			if vals == nil {
				for i := range ex {
					ex[i].Parts = appendPart(ex[i].Parts, p)
				}
				continue
			}
			hit = true
			if len(ex)*len(vals) > maxEnumExpansion {
				hit = false
				break
			}
			var next []luascript.Str
			for _, e := range ex {
				for _, v := range vals {
					next = append(next, luascript.Str{Parts: appendPart(append([]luascript.Part(nil), e.Parts...), luascript.Part{Kind: luascript.PartText, Text: v}), Via: alt.Via})
				}
			}
			ex = next
		}
		if !hit {
			out = append(out, alt)
			continue
		}
		changed = true
		out = append(out, ex...)
	}
	return out, changed
}

// appendPart appends p, merging literal text as the reader does.
func appendPart(parts []luascript.Part, p luascript.Part) []luascript.Part {
	if p.Kind == luascript.PartText {
		if n := len(parts); n > 0 && parts[n-1].Kind == luascript.PartText {
			parts[n-1].Text += p.Text
			return parts
		}
	}
	return append(parts, p)
}
