package luascript

import (
	"strconv"
	"strings"
)

// PartKind is what one piece of a string the script builds is.
type PartKind uint8

// The kinds of Part.
const (
	PartText   PartKind = iota // literal text: Text
	PartKey                    // KEYS[N]; N 0: a position the reading cannot tell (KEYS[i], ipairs(KEYS))
	PartArgv                   // ARGV[N]; N 0: a position the reading cannot tell
	PartNumber                 // a number the script computes (arithmetic, tonumber, #t, a loop counter)
	PartValue                  // a string the reading cannot name: read from Redis, decoded, cut from another string; Origin says where from
)

// Part is one piece of a Str.
type Part struct {
	Kind PartKind
	// Folded, on a PartValue, is a value the reading folded from several it
	// stopped telling apart (too many alternatives, a variable that keeps
	// changing, a value from code it does not follow): it may hold an
	// argument or a key of the script's, not only data.
	Folded bool
	// Min is, for a PartNumber, the least value it may take when the reading
	// knows one (a loop counter from a literal start, counting up); for a
	// PartArgv of a position it cannot tell (N 0), the least position
	// (ARGV[i] in for i = 2, #ARGV). 0: not known.
	Min    int32
	Text   string // PartText
	N      int    // PartKey, PartArgv
	Origin string // PartNumber, PartValue: where the value comes from ("HGET reply, line 12")
}

// Str is one way a value the script passes may be built: the concatenation of
// its Parts. A literal is one PartText; KEYS[1] is one PartKey; KEYS[1] .. ':' ..
// id is three parts.
type Str struct {
	Parts []Part
	// Via is the line of the outermost helper call that passed this value in as
	// an argument (0: the value was built in the function that uses it).
	Via int
}

// Literal is the text of a Str that is one literal.
func (s Str) Literal() (string, bool) {
	if len(s.Parts) == 1 && s.Parts[0].Kind == PartText {
		return s.Parts[0].Text, true
	}
	return "", false
}

// Key is the KEYS position of a Str that is exactly KEYS[n] (0: a position not
// known), and whether it is one.
func (s Str) Key() (int, bool) {
	if len(s.Parts) == 1 && s.Parts[0].Kind == PartKey {
		return s.Parts[0].N, true
	}
	return 0, false
}

// Number reports whether the Str is a number (a literal or computed one).
func (s Str) Number() bool { return len(s.Parts) == 1 && s.Parts[0].Kind == PartNumber }

// String describes the Str the way messages name it: "KEYS[1]", `"app:x"`,
// `KEYS[1] .. ":lock"`, `"q:" .. <the HGET reply, line 4>`.
func (s Str) String() string {
	var b strings.Builder
	for i, p := range s.Parts {
		if i > 0 {
			b.WriteString(" .. ")
		}
		b.WriteString(p.String())
	}
	if len(s.Parts) == 0 {
		return `""`
	}
	return b.String()
}

// String describes one part.
func (p Part) String() string {
	switch p.Kind {
	case PartText:
		return strconv.Quote(p.Text)
	case PartKey:
		if p.N == 0 {
			return "KEYS[i]"
		}
		return "KEYS[" + strconv.Itoa(p.N) + "]"
	case PartArgv:
		if p.N == 0 && p.Min > 1 {
			return "ARGV[i>=" + strconv.Itoa(int(p.Min)) + "]"
		}
		if p.N == 0 {
			return "ARGV[i]"
		}
		return "ARGV[" + strconv.Itoa(p.N) + "]"
	case PartNumber:
		if p.Text != "" {
			return p.Text
		}
		return "<a number>"
	}
	return "<" + p.Origin + ">"
}

func (p Part) equal(q Part) bool {
	return p.Kind == q.Kind && p.Text == q.Text && p.N == q.N && p.Origin == q.Origin && p.Min == q.Min && p.Folded == q.Folded
}

func (s Str) equal(t Str) bool {
	if len(s.Parts) != len(t.Parts) {
		return false
	}
	for i := range s.Parts {
		if !s.Parts[i].equal(t.Parts[i]) {
			return false
		}
	}
	return true
}

// altKind is what one alternative of a value is.
type altKind uint8

const (
	aNil       altKind = iota
	aBool              // true or false
	aStr               // a string or number: str (numbers are a PartNumber, or PartText for a literal integer)
	aTable             // one of the script's tables: id
	aFunc              // one of the script's functions: id
	aRedisCall         // redis.call (name "call") or redis.pcall ("pcall")
	aLib               // a library table or function of Redis's Lua: name ("string", "string.format")
	aKeys              // the KEYS table
	aArgv              // the ARGV table
	aData              // a value that cannot be one of the script's functions or tables: a reply, a decoded table (name: where from)
	aAny               // anything, one of the script's functions included (name: where from)
	aCoFunc            // a function made by coroutine.wrap
	aFalse             // false (what a condition's falsy side leaves of a value)
)

// alt is one alternative of a value.
type alt struct {
	kind altKind
	// folded: an aData folded from alternatives the reading stopped telling
	// apart (collapse), which may have held arguments.
	folded bool
	str    Str    // aStr
	id     int    // aTable, aFunc
	name   string // aLib, aRedisCall; aData, aAny: where from
}

func (a alt) equal(b alt) bool {
	if a.kind != b.kind || a.id != b.id || a.name != b.name || a.folded != b.folded {
		return false
	}
	return a.kind != aStr || a.str.equal(b.str)
}

// structural alternatives are never merged away: losing one would lose writes
// into a table, or calls of a function.
func (a alt) structural() bool {
	switch a.kind {
	case aTable, aFunc, aRedisCall, aLib, aKeys, aArgv, aCoFunc, aAny:
		return true
	}
	return false
}

// value is what an expression may evaluate to: any one of its alternatives.
// An empty value is no value at all (the code raises an error first, or never runs).
type value []alt

// The most alternatives a value keeps and the most parts a built string keeps;
// beyond, strings become one unnamed value (which no key check accepts).
const (
	maxAlts  = 16
	maxParts = 12
)

func (v value) contains(a alt) bool {
	for _, b := range v {
		if a.equal(b) {
			return true
		}
	}
	return false
}

// join is the union of two values, and whether it added anything to v.
func join(v, w value) (value, bool) {
	if len(w) == 0 {
		return v, false
	}
	if len(v) == 0 {
		return w, true // values are never changed in place: share it
	}
	grew := false
	for _, a := range w {
		if !v.contains(a) {
			v = append(v[:len(v):len(v)], a)
			grew = true
		}
	}
	if grew && len(v) > maxAlts {
		v = collapse(v, "one of many values")
	}
	return v, grew
}

// collapse keeps the structural alternatives and folds the others into one
// unnamed data value.
func collapse(v value, why string) value {
	var out value
	data := false
	for _, a := range v {
		switch {
		case a.structural():
			out = append(out, a)
		case a.kind == aNil:
			out = append(out, a)
		default:
			data = true
		}
	}
	if data {
		out = append(out, alt{kind: aData, name: why, folded: true})
	}
	return out
}

func joinAll(vs ...value) value {
	var out value
	for _, v := range vs {
		out, _ = join(out, v)
	}
	return out
}

func one(a alt) value { return value{a} }

func text(s string) alt { return alt{kind: aStr, str: Str{Parts: []Part{{Kind: PartText, Text: s}}}} }

func number(origin string) alt {
	return alt{kind: aStr, str: Str{Parts: []Part{{Kind: PartNumber, Origin: origin}}}}
}

func numberLit(lit string) alt {
	if n, ok := luaInteger(lit, false); ok {
		return alt{kind: aStr, str: Str{Parts: []Part{{Kind: PartNumber, Text: n}}}}
	}
	return number("a number")
}

func keyAlt(n int) alt  { return alt{kind: aStr, str: Str{Parts: []Part{{Kind: PartKey, N: n}}}} }
func argvAlt(n int) alt { return alt{kind: aStr, str: Str{Parts: []Part{{Kind: PartArgv, N: n}}}} }
func data(origin string) alt {
	return alt{kind: aData, name: origin}
}
func anyAlt(origin string) alt { return alt{kind: aAny, name: origin} }

var (
	nilValue  = value{{kind: aNil}}
	boolValue = value{{kind: aBool}}
)

// truthy are the alternatives that may be true in a condition; falsy what a
// value may be when it is false: nil or false (a value the reading cannot
// name may be either, but is then nothing else).
func truthy(v value) value {
	var out value
	for _, a := range v {
		if a.kind != aNil && a.kind != aFalse {
			out = append(out, a)
		}
	}
	return out
}

func falsy(v value) value {
	var out value
	add := func(a alt) {
		if !out.contains(a) {
			out = append(out, a)
		}
	}
	for _, a := range v {
		switch a.kind {
		case aNil:
			add(a)
		case aBool, aFalse:
			add(alt{kind: aFalse})
		case aData, aAny:
			add(alt{kind: aNil})
			add(alt{kind: aFalse})
		}
	}
	return out
}

// strParts is a's string as parts, when it is one (a Redis reply or other data
// is one PartValue).
func strParts(a alt) ([]Part, bool) {
	switch a.kind {
	case aStr:
		return a.str.Parts, true
	case aData:
		return []Part{{Kind: PartValue, Origin: a.name, Folded: a.folded}}, true
	}
	return nil, false
}

// concat is l .. r for every pair of alternatives.
func concat(l, r value) value {
	var out value
	for _, x := range l {
		for _, y := range r {
			if x.kind == aAny || y.kind == aAny || x.kind == aTable || y.kind == aTable {
				// A table's __concat metamethod may answer anything.
				out, _ = join(out, one(anyAlt("a concatenation through a metamethod")))
				continue
			}
			xp, ok1 := strParts(x)
			yp, ok2 := strParts(y)
			if !ok1 || !ok2 {
				continue // nil, booleans, functions: Lua raises an error
			}
			parts := make([]Part, 0, len(xp)+len(yp))
			parts = appendParts(parts, xp)
			parts = appendParts(parts, yp)
			if len(parts) == 0 {
				parts = []Part{{Kind: PartText}}
			}
			if len(parts) > maxParts {
				out, _ = join(out, one(alt{kind: aData, name: "a string built of many parts", folded: true}))
				continue
			}
			out, _ = join(out, one(alt{kind: aStr, str: Str{Parts: parts}}))
		}
	}
	return out
}

// appendParts appends ps to parts, merging literal text (a literal integer is
// text once concatenated).
func appendParts(parts, ps []Part) []Part {
	for _, p := range ps {
		if p.Kind == PartNumber && p.Text != "" {
			p = Part{Kind: PartText, Text: p.Text}
		}
		if p.Kind == PartText && p.Text == "" {
			continue
		}
		if n := len(parts); n > 0 && p.Kind == PartText && parts[n-1].Kind == PartText {
			parts[n-1].Text += p.Text
			continue
		}
		parts = append(parts, p)
	}
	return parts
}
