package luascript

import (
	"fmt"
	"strings"
)

// Reading is the reading as text, one call a line, for golden files and for
// people: each call's line, function, command and arguments (alternatives
// between braces, a spread as ...), the helper calls it is reached through,
// then what the reading cannot follow and the unsafe uses.
//
//	4: call HSET KEYS[1] "state" ARGV[2]
//	9: call DEL {KEYS[2] | KEYS[3]}  via helper drop (line 12)
func (in *Info) Reading() string {
	var b strings.Builder
	for _, c := range in.Calls {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	for _, d := range in.Dynamic {
		fmt.Fprintf(&b, "%d: cannot follow: %s\n", d.Line, d.What)
	}
	for _, u := range in.Unsafe {
		fmt.Fprintf(&b, "%d: unsafe (%s): %s\n", u.Line, u.Rule, u.Msg)
	}
	for _, n := range in.Numeric {
		fmt.Fprintf(&b, "%d: ARGV[%d] is used as a number\n", n.Line, n.Index)
	}
	return b.String()
}

// String is the call as one line of a Reading.
func (c Call) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d: %s ", c.Line, c.Fn)
	if c.Command != "" {
		b.WriteString(strings.ToUpper(c.Command))
	} else {
		b.WriteString("<command not known>")
	}
	if len(c.Choice) > 0 {
		fmt.Fprintf(&b, " (one of %s)", strings.ToUpper(strings.Join(c.Choice, ", ")))
	}
	for _, a := range c.Args[min(1, len(c.Args)):] {
		b.WriteByte(' ')
		b.WriteString(a.String())
	}
	for i, v := range c.Via {
		if i == 0 {
			b.WriteString("  via ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (line %d)", v.Func, v.Line)
	}
	return b.String()
}

// String is the argument as a Reading shows it: its one value, or its
// alternatives between braces; a spread is prefixed with "...".
func (a Arg) String() string {
	var alts []string
	for _, s := range a.Alts {
		alts = append(alts, s.String())
	}
	var v string
	switch len(alts) {
	case 0:
		v = "<no value Redis takes>"
	case 1:
		v = alts[0]
	default:
		v = "{" + strings.Join(alts, " | ") + "}"
	}
	if a.Kind == ArgSpread {
		if a.KeysFrom > 0 {
			return fmt.Sprintf("...KEYS[%d..]", a.KeysFrom)
		}
		return "..." + v
	}
	return v
}
