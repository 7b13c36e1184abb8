package rediscmd

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Key is one key among a call's arguments.
type Key struct {
	Pos   int       // index into the call's arguments; the command name is 0
	Spec  int       // index of the key spec that found it
	Flags []KeyFlag // that spec's flags
}

// Errors of KeyPositions and StaticKeyPositions, for errors.Is.
var (
	// ErrKeysUnresolved: where the keys are depends on arguments whose text is
	// not known (a static reading only).
	ErrKeysUnresolved = errors.New("key positions depend on arguments that are not literals")
	// ErrKeysInvalid: the arguments do not fit the key specs (a numkeys that is
	// not a number, fewer arguments than the keys need); Redis refuses such a call.
	ErrKeysInvalid = errors.New("the arguments do not fit the command's key specs")
	// ErrKeysIncomplete: a key spec of the command cannot find every key it may
	// touch (SORT's BY/GET/STORE, MIGRATE's KEYS): only the command's own code knows.
	ErrKeysIncomplete = errors.New("the command's key specs cannot find every key")
)

// KeyError says which key spec and argument made key positions fail.
type KeyError struct {
	Err    error // ErrKeysUnresolved, ErrKeysInvalid or ErrKeysIncomplete
	Spec   int   // index of the key spec
	Arg    int   // the argument it is about (the command name is 0); -1 when none
	Reason string
}

func (e *KeyError) Error() string { return e.Reason }

// Unwrap makes the error match its sentinel.
func (e *KeyError) Unwrap() error { return e.Err }

// Arg is one argument of a call as a static reading of a script sees it.
type Arg struct {
	// Text is the argument when Known.
	Text string
	// Known: the argument is a literal whose text is Text.
	Known bool
	// Number: the text is not known, but it is a number, so never a keyword.
	Number bool
	// Spread: the last argument expands to any number of arguments of unknown
	// text (unpack(t), a function call, ...). Only the last Arg may be Spread.
	Spread bool
}

// Literal is a known argument.
func Literal(text string) Arg { return Arg{Text: text, Known: true} }

// KeyPositions finds the keys of a concrete call the way Redis does from the key
// specs (db.c, getKeysUsingKeySpecs): args[0] is the command name (and args[1]
// the subcommand's, for a subcommand). The error is a *KeyError matching
// ErrKeysInvalid (the arguments do not fit: Redis finds no key and refuses the
// call) or ErrKeysIncomplete (only the command's own code knows its keys). A
// numkeys of 0 finds no key at all, as in Redis. Keys whose spec has
// KeyVariableFlags carry the spec's widest flags; Redis narrows them per call.
func (c *Command) KeyPositions(args []string) ([]Key, error) {
	in := make([]Arg, len(args))
	for i, a := range args {
		in[i] = Literal(a)
	}
	return c.StaticKeyPositions(in)
}

// StaticKeyPositions is KeyPositions for a call some of whose arguments are not
// known: where the key positions depend on them (a keyword search over an
// argument that is not a literal, a numkeys that is not a literal, keys that run
// into a Spread), the error matches ErrKeysUnresolved.
func (c *Command) StaticKeyPositions(args []Arg) ([]Key, error) {
	fixed := len(args) // arguments before a trailing Spread
	spread := fixed > 0 && args[fixed-1].Spread
	if spread {
		fixed--
	}
	for i := 0; i < fixed; i++ {
		if args[i].Spread {
			return nil, &KeyError{Err: ErrKeysUnresolved, Spec: -1, Arg: i, Reason: "an argument that expands to any number of values comes before others"}
		}
	}
	argc := fixed // meaningful only without a spread
	var keys []Key
	for j, spec := range c.KeySpecs {
		if slices.Contains(spec.Flags, KeyNotKey) {
			continue
		}
		fail := func(err error, arg int, format string, a ...any) ([]Key, error) {
			return nil, &KeyError{Err: err, Spec: j, Arg: arg, Reason: fmt.Sprintf(format, a...)}
		}
		first := 0
		switch spec.BeginSearch.Type {
		case "index":
			first = spec.BeginSearch.Index
		case "keyword":
			kw, from := spec.BeginSearch.Keyword, spec.BeginSearch.StartFrom
			if from <= 0 && spread {
				return fail(ErrKeysUnresolved, fixed, "%s searches for %s from the end, and the number of arguments is not known", c.Display(), kw)
			}
			start, end := from, argc-1 // Redis never looks at the last argument: keys must follow
			if from <= 0 {
				start, end = argc+from, 1
			} else if spread {
				end = -1 // the last argument is not known: search until the spread
			}
			for i := start; i != end; {
				if spread && i >= fixed-1 {
					// The keyword may be in the spread, or be the last fixed
					// argument with its keys in the spread.
					return fail(ErrKeysUnresolved, fixed, "%s looks for the keyword %s among arguments whose number is not known", c.Display(), kw)
				}
				if i >= argc || i < 1 {
					break
				}
				a := args[i]
				if a.Known && strings.EqualFold(a.Text, kw) {
					first = i + 1
					break
				}
				if !a.Known && !a.Number {
					return fail(ErrKeysUnresolved, i, "%s looks for the keyword %s, and an argument before it is not a literal: it could be %s", c.Display(), kw, kw)
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue // keyword absent: this spec finds no key
			}
		default:
			return fail(ErrKeysIncomplete, -1, "%s: key spec %d cannot be searched (%s)", c.Display(), j, notes(spec, "unknown begin_search"))
		}

		var last, step int
		switch spec.FindKeys.Type {
		case "range":
			step = spec.FindKeys.KeyStep
			lk, limit := spec.FindKeys.LastKey, spec.FindKeys.Limit
			switch {
			case lk >= 0:
				last = first + lk
			case spread:
				return fail(ErrKeysUnresolved, fixed, "the keys of %s run to the end of the arguments, whose number is not known", c.Display())
			case limit == 0:
				last = argc + lk
			default:
				last = first + ((argc-first)/limit + lk)
			}
		case "keynum":
			step = spec.FindKeys.KeyStep
			idx := first + spec.FindKeys.KeyNumIdx
			if spread && idx >= fixed {
				return fail(ErrKeysUnresolved, fixed, "the number of keys of %s is in an argument whose text is not known", c.Display())
			}
			if idx >= argc || idx < 0 {
				return fail(ErrKeysInvalid, idx, "%s needs the number of keys, and the call ends before it", c.Display())
			}
			if !args[idx].Known {
				return fail(ErrKeysUnresolved, idx, "the number of keys of %s is not a literal", c.Display())
			}
			n, ok := redisInt(args[idx].Text)
			if !ok || n < 0 {
				return fail(ErrKeysInvalid, idx, "the number of keys of %s is %q, not a count", c.Display(), args[idx].Text)
			}
			first += spec.FindKeys.FirstKey
			if n == 0 {
				// Redis's spec search fails, and the command's own key code finds
				// no key at all (EVAL body 0 has none; ZUNIONSTORE d 0 is refused).
				return nil, nil
			}
			last = first + int(n) - 1
		default:
			return fail(ErrKeysIncomplete, -1, "%s: key spec %d cannot be followed (%s)", c.Display(), j, notes(spec, "unknown find_keys"))
		}

		if spread && last >= fixed {
			return fail(ErrKeysUnresolved, fixed, "keys of %s fall among arguments whose text is not known", c.Display())
		}
		if !spread && (last >= argc || last < first || first >= argc) {
			return fail(ErrKeysInvalid, -1, "%s has too few arguments for its keys", c.Display())
		}
		for i := first; i <= last; i += step {
			keys = append(keys, Key{Pos: i, Spec: j, Flags: spec.Flags})
		}
		if slices.Contains(spec.Flags, KeyIncomplete) {
			return fail(ErrKeysIncomplete, -1, "%s: key spec %d may miss keys (%s)", c.Display(), j, notes(spec, "incomplete"))
		}
	}
	return keys, nil
}

// Incomplete reports whether some key spec of the command cannot find every key
// it may touch: only the command's own code knows them (SORT, MIGRATE).
func (c *Command) Incomplete() bool {
	for _, s := range c.KeySpecs {
		if slices.Contains(s.Flags, KeyIncomplete) || s.BeginSearch.Type == "unknown" || s.FindKeys.Type == "unknown" {
			return true
		}
	}
	return false
}

// TakesKeys reports whether the command has a key spec that finds keys (not
// only shard channels).
func (c *Command) TakesKeys() bool {
	for _, s := range c.KeySpecs {
		if !slices.Contains(s.Flags, KeyNotKey) {
			return true
		}
	}
	return false
}

func notes(s KeySpec, otherwise string) string {
	if s.Notes != "" {
		return s.Notes
	}
	return otherwise
}

// redisInt parses an integer the way Redis's string2ll does: optional '-', then
// decimal digits without leading zeros or spaces, within int64.
func redisInt(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && len(digits) > 1) || (digits == "0" && s != "0") {
		return 0, false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
