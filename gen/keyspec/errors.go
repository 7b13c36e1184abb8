package keyspec

import (
	"errors"
	"fmt"
	"github.com/hanchat/luagen/gen/strictyaml"
	"sort"
	"strings"
)

// ErrInvalid is what every parse and validation error matches with errors.Is.
var ErrInvalid = errors.New("invalid keyspec")

// Error is one problem of a spec, at the line of the entry at fault.
type Error struct {
	Pos
	Entry string // "key \"session\"", "script \"x\" ARGV \"owner\"", or ""
	Msg   string
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
