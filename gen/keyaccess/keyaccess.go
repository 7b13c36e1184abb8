// Package keyaccess tells, from the static reading of a script the compiler
// accepted, what each of its calls does to each of its KEYS: read it, write
// it, or both, by the flags Redis's own key specs give the command
// (gen/rediscmd). luagen diff and luagen doc show it per script and key.
package keyaccess

import (
	"fmt"
	"slices"
	"sort"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/gen/rediscmd"
)

// Access is what a script does to the key at one KEYS position.
type Access struct {
	Read, Write bool
	// Commands are the commands that touch the position ("zadd",
	// "object|encoding"), sorted.
	Commands []string
}

// Mode is "read", "write" or "read, write".
func (a *Access) Mode() string {
	switch {
	case a.Read && a.Write:
		return "read, write"
	case a.Write:
		return "write"
	case a.Read:
		return "read"
	}
	return ""
}

// Of is what src's calls do to each KEYS index (1-based), and at 0 what they
// do through KEYS[i] of an index the reading does not know (a loop over a
// repeating position). An index no call names as a key is absent.
func Of(src *compiler.Source) map[int]*Access {
	out := map[int]*Access{}
	cmds := map[int]map[string]bool{}
	for i, call := range src.Info.Calls {
		if i >= len(src.Commands) || src.Commands[i] == nil {
			continue
		}
		cmd := src.Commands[i]
		keys, err := cmd.StaticKeyPositions(compiler.StaticArgs(call.Args))
		if err != nil {
			continue
		}
		for _, k := range keys {
			if k.Pos >= len(call.Args) || call.Args[k.Pos].Kind != luascript.ArgKey {
				continue
			}
			pos := call.Args[k.Pos].Key // 0: KEYS[i] of an index the reading does not know
			a := out[pos]
			if a == nil {
				a = &Access{}
				out[pos] = a
				cmds[pos] = map[string]bool{}
			}
			read, write := flags(k.Flags)
			a.Read = a.Read || read
			a.Write = a.Write || write
			cmds[pos][cmd.Name] = true
		}
	}
	for pos, set := range cmds {
		for c := range set {
			out[pos].Commands = append(out[pos].Commands, c)
		}
		sort.Strings(out[pos].Commands)
	}
	return out
}

// flags reads a key spec's flags as read and write.
func flags(fs []rediscmd.KeyFlag) (read, write bool) {
	for _, f := range fs {
		switch f {
		case rediscmd.KeyRO, rediscmd.KeyAccess:
			read = true
		case rediscmd.KeyRW:
			read, write = true, true
		case rediscmd.KeyOW, rediscmd.KeyRM, rediscmd.KeyUpdate, rediscmd.KeyInsert, rediscmd.KeyDelete:
			write = true
		}
	}
	if !read && !write {
		read = true // a key spec without an access flag (EXISTS, TYPE): the key is looked at
	}
	return read, write
}

// KeyUse is one declared key a script may reach, and how.
type KeyUse struct {
	Key      *keyspec.Key
	Position int // the KEYS position (1-based); 0 for a key not passed in KEYS
	// From says how a key not passed in KEYS is reached: "ARGV[1] prefix"
	// (an ARGV of type key), "derived from KEYS[2] jobs", "derived from
	// ARGV[1] prefix", "derived from its literal start", "derived from data".
	From string
	Access
}

// Where names the use for people: "KEYS[1] lock", or its From.
func (u KeyUse) Where(s *keyspec.Script) string {
	if u.Position > 0 && u.Position <= len(s.Keys) {
		return fmt.Sprintf("KEYS[%d] %s", u.Position, s.Keys[u.Position-1].Name)
	}
	return u.From
}

// Uses lists, for each KEYS position of src's script, each key it accepts
// (one_of) with what the script does there, by position then key name; then
// the keys it reaches otherwise (passed in ARGV, derived), with what its
// calls do to them, by how they are reached then key name.
func Uses(src *compiler.Source) []KeyUse {
	return append(positionUses(src), otherUses(src)...)
}

// otherUses are the keys a script reaches other than through its KEYS
// positions: the resolved key arguments that are not KEYS[n].
func otherUses(src *compiler.Source) []KeyUse {
	s := src.Script
	type id struct {
		key  *keyspec.Key
		from string
	}
	acc := map[id]*Access{}
	var order []id
	for _, r := range src.Resolved {
		if r.Call >= len(src.Info.Calls) || r.Call >= len(src.Commands) || src.Commands[r.Call] == nil {
			continue
		}
		call, cmd := src.Info.Calls[r.Call], src.Commands[r.Call]
		if r.Arg >= len(call.Args) || call.Args[r.Arg].Kind == luascript.ArgKey {
			continue // a KEYS position's: positionUses
		}
		keys, err := cmd.StaticKeyPositions(compiler.StaticArgs(call.Args))
		if err != nil {
			continue
		}
		var read, write, found bool
		for _, k := range keys {
			if k.Pos == r.Arg {
				rd, wr := flags(k.Flags)
				read, write, found = read || rd, write || wr, true
			}
		}
		if !found {
			continue
		}
		add := func(k *keyspec.Key, from string) {
			i := id{k, from}
			a := acc[i]
			if a == nil {
				a = &Access{}
				acc[i] = a
				order = append(order, i)
			}
			a.Read, a.Write = a.Read || read, a.Write || write
			if !slices.Contains(a.Commands, cmd.Name) {
				a.Commands = append(a.Commands, cmd.Name)
				sort.Strings(a.Commands)
			}
		}
		for _, d := range r.Derived {
			if d.Key != nil {
				add(d.Key, "derived from "+derivedFrom(s, d))
			}
		}
		for _, alt := range call.Args[r.Arg].Alts {
			if len(alt.Parts) == 1 && alt.Parts[0].Kind == luascript.PartArgv {
				if a := s.ArgAt(alt.Parts[0].N); a != nil && a.Key != nil {
					add(a.Key, fmt.Sprintf("ARGV[%d] %s", alt.Parts[0].N, a.Name))
				}
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].from != order[j].from {
			return order[i].from < order[j].from
		}
		return order[i].key.Name < order[j].key.Name
	})
	var out []KeyUse
	for _, i := range order {
		out = append(out, KeyUse{Key: i.key, From: i.from, Access: *acc[i]})
	}
	return out
}

// derivedFrom is what a derived key is built from, for people.
func derivedFrom(s *keyspec.Script, d *keyspec.Derived) string {
	switch {
	case d.From > 0 && d.From <= len(s.Keys):
		return fmt.Sprintf("KEYS[%d] %s", d.From, s.Keys[d.From-1].Name)
	case d.FromArgv > 0 && d.FromArgv <= len(s.Argv):
		return fmt.Sprintf("ARGV[%d] %s", d.FromArgv, s.Argv[d.FromArgv-1].Name)
	case d.FromData:
		return "data"
	}
	return "its literal start"
}

// positionUses lists, for each KEYS position of src's script, each key it
// accepts (one_of) with what the script does there, by position then key name.
func positionUses(src *compiler.Source) []KeyUse {
	acc := Of(src)
	s := src.Script
	// Each position's access: its own indexes' (every element of a
	// repeating one), and what calls do through an unknown index, which may
	// be any position's (the repeating one's, when the script has one).
	byPos := map[*keyspec.ScriptKey]*Access{}
	merge := func(pos *keyspec.ScriptKey, a *Access) {
		b := byPos[pos]
		if b == nil {
			b = &Access{}
			byPos[pos] = b
		}
		b.Read, b.Write = b.Read || a.Read, b.Write || a.Write
		for _, c := range a.Commands {
			if !slices.Contains(b.Commands, c) {
				b.Commands = append(b.Commands, c)
			}
		}
		sort.Strings(b.Commands)
	}
	for n, a := range acc {
		switch pos := s.KeyAt(n); {
		case n == 0:
			for _, p := range s.Keys {
				if p.Repeat != nil || s.Keys[len(s.Keys)-1].Repeat == nil {
					merge(p, a)
				}
			}
		case pos != nil:
			merge(pos, a)
		}
	}
	var out []KeyUse
	for i, pos := range s.Keys {
		a := byPos[pos]
		if a == nil {
			a = &Access{}
		}
		for _, k := range pos.OneOf {
			out = append(out, KeyUse{Key: k, Position: i + 1, Access: *a})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Position != out[j].Position {
			return out[i].Position < out[j].Position
		}
		return out[i].Key.Name < out[j].Key.Name
	})
	return out
}
