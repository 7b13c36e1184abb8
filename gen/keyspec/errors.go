package keyspec

import (
	"errors"
	"fmt"
	"github.com/hanchat/luagen/gen/strictyaml"
	"sort"
	"strconv"
	"strings"
)

// ErrInvalid is what every parse and validation error matches with errors.Is.
var ErrInvalid = errors.New("invalid keyspec")

// Error is one problem of a spec, at the line of the entry at fault.
type Error struct {
	Pos
	Entry string // "key \"session\"", "script \"x\" ARGV \"owner\"", or ""
	Msg   string
	// follows is the entry ("key \"lock\"") whose property the error is
	// about, from another entry that refers to it (a script's ttl_of): when
	// that entry has an error of its own, this one is its knock-on and is
	// dropped.
	follows string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Entry != "" {
		b.WriteString(e.Entry)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is makes every Error match ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// List is every problem found in one spec, in file order.
type List []*Error

func (l List) Error() string { return strictyaml.Join(l) }

// Is makes a List match ErrInvalid.
func (l List) Is(target error) bool { return target == ErrInvalid }

// Unwrap exposes each error to errors.As.
func (l List) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

func (l List) sorted() List {
	sort.SliceStable(l, func(i, j int) bool { return l[i].Line < l[j].Line })
	return l
}

// firstPerEntry keeps, of the errors about one entry of the spec (a key, a
// script, a user, ... with everything under it: its placeholders, KEYS, ARGV,
// reply), the first one found, in the order the parser checks: the later ones
// are mostly its knock-on effects (a KEYS position whose key is not declared
// then shares no placeholder), which send a reader after problems that are
// not there. Fixing the first shows the next. So is an error about another
// entry's property (a script's ttl_of of a key) when that entry has an error
// (the key's TTL rule). Errors of no entry all stay.
func (l List) firstPerEntry() List {
	seen := map[string]bool{}
	var out List
	for _, e := range l {
		if e.follows != "" && seen[e.follows] {
			continue
		}
		if root := e.entryRoot(); root != "" {
			if seen[root] {
				continue
			}
			seen[root] = true
		}
		out = append(out, e)
	}
	return out
}

// entryRoot is the entry an error is about, up to its quoted name ("script
// \"put\"" of "script \"put\" KEYS[1] \"item\""); an entry without a quoted
// name ("db a.db0", "breaking ignore") counts with its line; "" for none.
func (e *Error) entryRoot() string {
	if e.Entry == "" {
		return ""
	}
	i := strings.IndexByte(e.Entry, '"')
	if i < 0 {
		return fmt.Sprintf("%s@%d", e.Entry, e.Line)
	}
	q, err := strconv.QuotedPrefix(e.Entry[i:])
	if err != nil {
		return e.Entry
	}
	return e.Entry[:i] + q
}
