package runtime

import (
	"fmt"
	"strings"
)

// This file is what generated wrappers call for the spec's repeating, unused
// and channel positions and for shared placeholders inside a segment.

// KeyCount refuses a repeating KEYS position given fewer than min or more
// than max keys.
func (in *Input) KeyCount(pos string, n, min, max int) {
	if in.err == nil && (n < min || n > max) {
		in.err = &ArgError{Script: in.script.name, Arg: "KEYS " + pos, Reason: fmt.Sprintf("%d keys, want %d..%d", n, min, max)}
	}
}

// ArgCount refuses a repeating argument given fewer than min or more than max
// values.
func (in *Input) ArgCount(arg string, n, min, max int) {
	if in.err == nil && (n < min || n > max) {
		in.argErr(arg, fmt.Sprintf("%d values, want %d..%d", n, min, max))
	}
}

// ChannelKey appends a channel's name as the key of KEYS position pos (a
// script that publishes to KEYS[n]); the zero channel value ("") and, on a
// prefixed Input, a channel of another deployment prefix are refused.
func (in *Input) ChannelKey(pos, name string) {
	in.prefixedKey(pos, name, strings.HasPrefix(name, in.prefix))
}

// Channel appends a channel's name as an argument (a script that publishes
// to ARGV[n]), refusing what ChannelKey refuses.
func (in *Input) Channel(arg, name string) {
	in.nameArg(arg, name, strings.HasPrefix(name, in.prefix), "channel", "no channel (build it with its channel builder)")
}

// Unused appends the empty string for an argument the script never reads
// (declared unused: callers pass it for compatibility).
func (in *Input) Unused() { in.addString("") }

// Const appends an integer the spec fixes (a key's max_len).
func (in *Input) Const(v int64) { in.addInt(v) }

// KeyPart says where one placeholder's value is in the names of one key
// pattern, after a deployment prefix: Lits are the pattern's literal text
// runs (Lits[0] before the first placeholder, Lits[i] after the i-th, "" where
// there is none), Index is the placeholder (0-based). keyspec refuses a
// pattern whose names read back two ways: every placeholder but the last is
// followed by text whose first byte its values never hold, so the value ends
// at that byte's first occurrence.
type KeyPart struct {
	Lits  []string
	Index int
}

// Of is the value of the placeholder in name, false when name is not a name
// of the pattern's literal shape.
func (p KeyPart) Of(name string) (string, bool) {
	if len(p.Lits) < 2 || p.Index < 0 || p.Index >= len(p.Lits)-1 || !strings.HasPrefix(name, p.Lits[0]) {
		return "", false
	}
	rest := name[len(p.Lits[0]):]
	last := len(p.Lits) - 2 // the last placeholder
	for i := 0; i <= p.Index; i++ {
		after := p.Lits[i+1]
		end := len(rest) - len(after)
		if i < last {
			if after == "" {
				return "", false
			}
			end = strings.IndexByte(rest, after[0])
		}
		if end < 1 || !strings.HasPrefix(rest[end:], after) {
			return "", false
		}
		if i == p.Index {
			return rest[:end], true
		}
		rest = rest[end+len(after):]
	}
	return "", false
}

// SamePart refuses two keys whose shared placeholder ph (at pa in key a, at pb
// in key b, after the deployment prefix) holds different values.
func (in *Input) SamePart(ph, a string, pa KeyPart, b string, pb KeyPart) {
	if in.err != nil || len(a) < len(in.prefix) || len(b) < len(in.prefix) {
		return
	}
	va, okA := pa.Of(a[len(in.prefix):])
	vb, okB := pb.Of(b[len(in.prefix):])
	if !okA || !okB || va != vb {
		in.err = mismatchedKeys(in.script.name, ph)
	}
}
