package keyspec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hanchat/luagen/runtime/keypart"
)

// Pattern is a key or channel pattern such as "shop:cart:{user_id}":
// literal text with typed placeholders, each a whole ':'-separated segment or
// inside one ("b_{id}_settings"). Braces in the name are Redis Cluster's hash
// tag: "{{user_id}}" is the tag around one placeholder (the key holds
// "{<value>}"), and "\{" and "\}" are literal braces, for any other tag
// ("\{bull\}:{queue}:wait", "\{orders:lock:{id}\}:expiry"). As in Redis, the
// tag is the text between the name's first '{' and the first '}' after it; no
// placeholder value holds a brace, so where the tag is follows from the
// pattern alone.
type Pattern struct {
	Raw string
	// Parts are the name in order: literal text (':' and the tag's braces
	// included) and placeholders, never two placeholders in a row.
	Parts []Part
	// Segments is the ':'-separated view of a simple pattern, one whose every
	// segment is one literal, one placeholder whose values hold no ':', or
	// {{placeholder}}; nil for any other pattern (Simple reports which).
	Segments []Segment
	// tag is the hash tag's content; nil when the name has no tag.
	tag []Part
}

// Part is a run of literal text or one placeholder of a pattern.
type Part struct {
	Literal string
	Param   *Param // nil for literal text
}

// Segment is one ':'-separated part of a simple pattern.
type Segment struct {
	Literal string
	Param   *Param // nil for a literal segment
	Tag     bool   // the placeholder is the pattern's hash tag: "{" value "}"
}

// Simple reports whether the pattern has the ':'-separated view Segments:
// every segment one literal, one placeholder that holds no ':', or one
// placeholder in a hash tag.
func (p Pattern) Simple() bool { return p.Segments != nil }

// HasTag reports whether names of the pattern have a hash tag.
func (p Pattern) HasTag() bool { return p.tag != nil }

// Tag is the hash tag's content (the parts between its braces), nil when the
// pattern has none. Two names whose tags hold the same text are in one slot.
func (p Pattern) Tag() []Part { return p.tag }

// TagParam is the placeholder that is the whole content of the pattern's hash
// tag ("{{user_id}}"), or nil.
func (p Pattern) TagParam() *Param {
	if len(p.tag) == 1 && p.tag[0].Param != nil {
		return p.tag[0].Param
	}
	return nil
}

// TagText is the content of a hash tag that holds no placeholder ("bull" of
// "\{bull\}:..."): every name of the pattern is in that one slot.
func (p Pattern) TagText() (string, bool) {
	if p.tag == nil {
		return "", false
	}
	var b strings.Builder
	for _, t := range p.tag {
		if t.Param != nil {
			return "", false
		}
		b.WriteString(t.Literal)
	}
	return b.String(), true
}

// TagSignature is the hash tag's content with each placeholder as {name}:
// two names of patterns with one signature are in one slot when the
// placeholders hold the same values. "" without a tag.
func (p Pattern) TagSignature() string {
	var b strings.Builder
	for _, t := range p.tag {
		if t.Param != nil {
			b.WriteString("{" + t.Param.Name + "}")
		} else {
			b.WriteString(strings.NewReplacer("{", `\{`, "}", `\}`).Replace(t.Literal))
		}
	}
	return b.String()
}

// Index is the position of the named placeholder's segment in a simple
// pattern, or -1 (not in the pattern, or the pattern is not simple).
func (p Pattern) Index(name string) int {
	for i, s := range p.Segments {
		if s.Param != nil && s.Param.Name == name {
			return i
		}
	}
	return -1
}

// Has reports whether the pattern has the named placeholder.
func (p Pattern) Has(name string) bool { return p.Param(name) != nil }

// Param is the named placeholder of the pattern, or nil.
func (p Pattern) Param(name string) *Param {
	for _, pt := range p.Parts {
		if pt.Param != nil && pt.Param.Name == name {
			return pt.Param
		}
	}
	return nil
}

// Params lists the pattern's placeholders in order.
func (p Pattern) Params() []*Param {
	var out []*Param
	for _, pt := range p.Parts {
		if pt.Param != nil {
			out = append(out, pt.Param)
		}
	}
	return out
}

// LiteralPrefix is the text before the first placeholder (the whole name of a
// pattern without one), the part an ACL pattern or a SCAN MATCH can rely on.
func (p Pattern) LiteralPrefix() string {
	var b strings.Builder
	for _, pt := range p.Parts {
		if pt.Param != nil {
			break
		}
		b.WriteString(pt.Literal)
	}
	return b.String()
}

// Family is the pattern's family as an ACL glob: its literal text up to and
// including its first ':' and "*" ("cache:*" of cache:{name}, "jobs:*" of
// jobs:stream); with no ':' before its first placeholder, the literal text
// before it and "*" ("b_*" of b_{id}_settings); the pattern itself when it is
// literal text without ':'; "" when it starts with a placeholder.
func (p Pattern) Family() string {
	lit := p.LiteralPrefix()
	switch i := strings.IndexByte(lit, ':'); {
	case i >= 0:
		return lit[:i+1] + "*"
	case len(p.Params()) == 0:
		return lit
	case lit == "":
		return ""
	}
	return lit + "*"
}

// FamilyReserved is what a family glob (Pattern.Family, or a prefix's Glob)
// keeps out of a deployment prefix's segments (runtime.CheckPrefix): "cache"
// of "cache:*" (no segment may be cache), "b_*" of "b_*" (no segment may start
// with b_), an exact name itself.
func FamilyReserved(glob string) string {
	if i := strings.IndexByte(glob, ':'); i >= 0 {
		return glob[:i]
	}
	return glob
}

// Glob is the pattern with each placeholder replaced by '*', usable as an ACL key
// pattern or SCAN MATCH. A pattern without placeholders is its own glob. No
// literal text holds a glob character ('*', '?', '[', '\\'); braces are literal
// in Redis's globs.
func (p Pattern) Glob() string {
	var b strings.Builder
	for _, pt := range p.Parts {
		if pt.Param != nil {
			b.WriteByte('*')
		} else {
			b.WriteString(pt.Literal)
		}
	}
	return b.String()
}

// Example is a concrete name the pattern produces, each placeholder holding a
// valid value: a key for ACL checks and documentation.
func (p Pattern) Example() string {
	var b strings.Builder
	for _, pt := range p.Parts {
		if pt.Param == nil {
			b.WriteString(pt.Literal)
			continue
		}
		samples := pt.Param.samples()
		if pt.Param.Type == TypeName || pt.Param.Type == TypePath {
			samples = []string{"name"}
		}
		b.WriteString(samples[len(samples)-1])
	}
	return b.String()
}

// Match reports whether name is a name of the pattern: its literal text in
// order, and between it values each placeholder accepts (Param.Accepts).
func (p Pattern) Match(name string) bool { return matchParts(p.Parts, name, 0) }

// matchDepth bounds matchParts' recursion: a pattern has at most a few dozen parts.
const matchDepth = 256

func matchParts(parts []Part, s string, depth int) bool {
	if len(parts) == 0 {
		return s == ""
	}
	if depth > matchDepth {
		return false
	}
	pt := parts[0]
	if pt.Param == nil {
		return strings.HasPrefix(s, pt.Literal) && matchParts(parts[1:], s[len(pt.Literal):], depth+1)
	}
	for n := 1; n <= len(s); n++ {
		if !pt.Param.alphabet().has(s[n-1]) {
			break // every value is in the alphabet: a longer one holds this byte too
		}
		if pt.Param.Accepts(s[:n]) && matchParts(parts[1:], s[n:], depth+1) {
			return true
		}
	}
	return false
}

// literalOK reports whether s may appear literally in a key: nothing a glob, a
// hash tag or a separator would read.
func literalOK(s string) bool { return keypart.Name(s, len(s)) }

// literalByte reports whether c may appear in a pattern's literal text: a
// name byte or the separator ':' (braces are written \{ and \}).
func literalByte(c byte) bool { return c == ':' || keypart.Name(string(c), 1) }

// marker stands for a placeholder when a pattern's text is split into segments;
// no literal text holds it.
const marker = "\x00"

// parsePattern reads raw into parts; params are looked up by name.
func parsePattern(raw string, params map[string]*Param) (Pattern, error) {
	p := Pattern{Raw: raw}
	if raw == "" {
		return p, fmt.Errorf("pattern is empty")
	}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			p.Parts = append(p.Parts, Part{Literal: lit.String()})
			lit.Reset()
		}
	}
	seen := map[string]bool{}
	param := func(name string) error {
		if !identOK(name) {
			return fmt.Errorf("placeholder {%s}: a name is [a-z][a-z0-9_]*", name)
		}
		if seen[name] {
			return fmt.Errorf("placeholder {%s} appears twice", name)
		}
		seen[name] = true
		prm, ok := params[name]
		if !ok {
			hint := ""
			if len(params) == 0 {
				hint = fmt.Sprintf(` (for the literal text {%s}, a fixed hash tag, write \{%s\})`, name, name)
			}
			return fmt.Errorf("placeholder {%s} has no type: declare it under params%s", name, hint)
		}
		if n := len(p.Parts); lit.Len() == 0 && n > 0 && p.Parts[n-1].Param != nil {
			return fmt.Errorf("placeholders {%s} and {%s} touch: put literal text between them, so that a name reads back one way", p.Parts[n-1].Param.Name, name)
		}
		flush()
		p.Parts = append(p.Parts, Part{Param: prm})
		return nil
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			if i+1 >= len(raw) || (raw[i+1] != '{' && raw[i+1] != '}') {
				return p, fmt.Errorf(`a backslash escapes only a brace: \{ and \} are literal braces (a hash tag); no other character needs one`)
			}
			lit.WriteByte(raw[i+1])
			i += 2
		case strings.HasPrefix(raw[i:], "{{"):
			end := strings.Index(raw[i+2:], "}}")
			if end < 0 || !identOK(raw[i+2:i+2+end]) {
				return p, fmt.Errorf(`"{{" opens the hash tag around one placeholder, {{name}}; write any other tag with literal braces, \{ and \}: \{orders:lock:{id}\}`)
			}
			lit.WriteByte('{')
			if err := param(raw[i+2 : i+2+end]); err != nil {
				return p, err
			}
			lit.WriteByte('}')
			i += end + 4
		case c == '{':
			end := strings.IndexByte(raw[i+1:], '}')
			if end < 0 {
				return p, fmt.Errorf(`a { without its }: a placeholder is {name}, a literal brace \{`)
			}
			name := raw[i+1 : i+1+end]
			if strings.ContainsAny(name, `\{`) {
				return p, fmt.Errorf(`a hash tag brace inside placeholder {%s: a tag cannot split a placeholder; put the placeholder wholly inside the tag (\{{id}\}) or outside it`, strings.TrimRight(name, `\`))
			}
			if err := param(name); err != nil {
				return p, err
			}
			i += end + 2
		case c == '}':
			return p, fmt.Errorf(`a } that closes nothing: a literal brace is \}`)
		case !literalByte(c):
			return p, fmt.Errorf("character %q: literal text is [A-Za-z0-9._-] and ':' between segments, a placeholder {name}, a brace \\{ \\}", string(c))
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	for name := range params {
		if !seen[name] {
			return p, fmt.Errorf("param %q does not appear in the pattern", name)
		}
	}
	if err := p.checkSegments(); err != nil {
		return p, err
	}
	if err := p.findTag(); err != nil {
		return p, err
	}
	if err := p.checkUnambiguous(); err != nil {
		return p, err
	}
	p.Segments = p.simpleSegments()
	return p, nil
}

// shape is the pattern's text with each placeholder as marker.
func (p Pattern) shape() string {
	var b strings.Builder
	for _, pt := range p.Parts {
		if pt.Param != nil {
			b.WriteString(marker)
		} else {
			b.WriteString(pt.Literal)
		}
	}
	return b.String()
}

// checkSegments refuses an empty ':'-separated segment ("a::b", ":a", "a:").
func (p Pattern) checkSegments() error {
	for i, seg := range strings.Split(p.shape(), ":") {
		if seg == "" {
			return fmt.Errorf("segment %d is empty: a ':' at either end, or two in a row", i+1)
		}
	}
	return nil
}

// findTag finds the hash tag, Redis's way: the text between the first '{' and
// the first '}' after it. A second tag, a brace without its pair and an empty
// tag are refused: Redis would hash another part of the name than it reads.
func (p *Pattern) findTag() error {
	open, close := -1, -1 // indexes into Parts of the literals holding the braces
	var content []Part
	for i, pt := range p.Parts {
		if pt.Param != nil {
			if open >= 0 && close < 0 {
				content = append(content, pt)
			}
			continue
		}
		for j := 0; j < len(pt.Literal); j++ {
			switch c := pt.Literal[j]; {
			case c == '{' && open < 0:
				open = i
				if k := strings.IndexByte(pt.Literal[j+1:], '}'); k >= 0 {
					if k > 0 {
						content = append(content, Part{Literal: pt.Literal[j+1 : j+1+k]})
					}
					close = i
					j += k + 1
				} else if rest := pt.Literal[j+1:]; rest != "" {
					content = append(content, Part{Literal: rest})
					j = len(pt.Literal)
				}
			case c == '}' && open >= 0 && close < 0:
				if j > 0 {
					content = append(content, Part{Literal: pt.Literal[:j]})
				}
				close = i
			case c == '{':
				return fmt.Errorf("a second hash tag: Redis hashes only the first {...} of a name, so a pattern has at most one")
			case c == '}':
				return fmt.Errorf(`a } that closes no hash tag: a hash tag is \{...\} or {{placeholder}}`)
			}
		}
	}
	switch {
	case open < 0:
		return nil
	case close < 0:
		return fmt.Errorf(`a hash tag \{ without its \}: Redis would hash the whole name`)
	case len(content) == 0:
		return fmt.Errorf("an empty hash tag {}: Redis hashes the whole name, not the tag")
	}
	p.tag = content
	return nil
}

// checkUnambiguous refuses a pattern whose names could be read two ways: every
// placeholder but the last must be followed by text starting with a byte its
// values never hold, so a name tells where each value ends and no two calls
// with different values share a name.
func (p Pattern) checkUnambiguous() error {
	var last *Param
	for _, pt := range p.Parts {
		if pt.Param != nil {
			last = pt.Param
		}
	}
	for i, pt := range p.Parts {
		if pt.Param == nil || pt.Param == last {
			continue
		}
		next := p.Parts[i+1].Literal // never empty: placeholders do not touch
		if pt.Param.alphabet().has(next[0]) {
			return fmt.Errorf("placeholder {%s} is followed by %q, and its values may hold %q: a name could be read two ways, so two calls with different values could share a key; end {%s} with a byte its values never hold (':' for all but a path), or make it the last placeholder",
				pt.Param.Name, next, string(next[0]), pt.Param.Name)
		}
	}
	return nil
}

// simpleSegments is the ':'-separated view of the pattern, or nil when a
// segment is more than one literal, one placeholder or {{placeholder}}, or a
// placeholder's values may hold ':'.
func (p Pattern) simpleSegments() []Segment {
	params := p.Params()
	var out []Segment
	n := 0
	for _, seg := range strings.Split(p.shape(), ":") {
		switch {
		case seg == marker || seg == "{"+marker+"}":
			prm := params[n]
			n++
			if prm.Type == TypePath {
				return nil
			}
			out = append(out, Segment{Param: prm, Tag: seg != marker})
		case !strings.ContainsAny(seg, marker+"{}"):
			out = append(out, Segment{Literal: seg})
		default:
			return nil
		}
	}
	return out
}

func identOK(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// Accepts reports whether s is a valid encoded value of the placeholder as it
// appears in a key (for an enum with sha256 encoding: the digest, not the label).
func (p *Param) Accepts(s string) bool {
	switch p.Type {
	case TypeUUID:
		return keypart.UUID(s)
	case TypeInt:
		n, err := strconv.ParseInt(s, 10, 64)
		return err == nil && strconv.FormatInt(n, 10) == s && n >= p.Min && n <= p.Max
	case TypeHex:
		return keypart.Hex(s, p.Len)
	case TypeSHA256, TypeHMAC:
		return keypart.Hex(s, 64)
	case TypeName:
		return keypart.Name(s, p.MaxLen)
	case TypePath:
		return keypart.Path(s, p.MaxLen)
	case TypeEnum:
		for _, v := range p.Enum.Values {
			if p.EncodedValue(v) == s {
				return true
			}
		}
	}
	return false
}

// EncodedValue is how an enum value appears in a key.
func (p *Param) EncodedValue(v string) string {
	if p.Encode == EncodeSHA256 {
		return keypart.EnumHash(v)
	}
	return v
}

// samples are encoded values the placeholder accepts, used to find overlaps.
func (p *Param) samples() []string {
	switch p.Type {
	case TypeUUID:
		return []string{"00000000-0000-0000-0000-000000000000"}
	case TypeInt:
		// The bounds, and the smallest value of every digit count in between, so
		// that an overlap with a fixed-length hex or a name is found exactly.
		out := []string{strconv.FormatInt(p.Min, 10), strconv.FormatInt(p.Max, 10)}
		for pow := int64(1); pow <= p.Max && pow > 0; pow *= 10 {
			if v := max(pow, p.Min); v <= p.Max {
				out = append(out, strconv.FormatInt(v, 10))
			}
		}
		return out
	case TypeHex:
		return []string{strings.Repeat("0", p.Len), strings.Repeat("a", p.Len)}
	case TypeSHA256, TypeHMAC:
		return []string{strings.Repeat("0", 64)}
	case TypeName:
		return []string{"a", "0", "0a-_."[:min(5, p.MaxLen)]}
	case TypePath:
		return []string{"a", "0", "0a-_."[:min(5, p.MaxLen)], "a:b"[:min(3, p.MaxLen)]}
	case TypeEnum:
		var out []string
		for _, v := range p.Enum.Values {
			out = append(out, p.EncodedValue(v))
		}
		return out
	}
	return nil
}

// overlapWitness returns a concrete key both patterns match, or "" when none
// can; certain is false when it is a name both patterns' shapes allow but that
// luagen did not prove a name of both (an int's bounds), reported as a
// possible overlap.
func overlapWitness(a, b Pattern) (witness string, certain bool) {
	if a.Simple() && b.Simple() {
		return segmentsWitness(a, b), true
	}
	return shapeWitness(a, b)
}

// segmentsWitness compares two simple patterns segment by segment: a name of
// either has exactly its segments, so they overlap only segment-wise.
func segmentsWitness(a, b Pattern) string {
	if len(a.Segments) != len(b.Segments) {
		return ""
	}
	parts := make([]string, len(a.Segments))
	for i := range a.Segments {
		w, ok := segmentWitness(a.Segments[i], b.Segments[i])
		if !ok {
			return ""
		}
		parts[i] = w
	}
	return strings.Join(parts, ":")
}

func segmentWitness(a, b Segment) (string, bool) {
	if a.Tag != b.Tag {
		// "{v}" is never a literal segment, nor a value of a placeholder: no
		// placeholder value holds a brace.
		return "", false
	}
	if a.Tag {
		w, ok := segmentWitness(Segment{Param: a.Param}, Segment{Param: b.Param})
		return "{" + w + "}", ok
	}
	switch {
	case a.Param == nil && b.Param == nil:
		return a.Literal, a.Literal == b.Literal
	case a.Param == nil:
		return a.Literal, b.Param.Accepts(a.Literal)
	case b.Param == nil:
		return b.Literal, a.Param.Accepts(b.Literal)
	}
	for _, s := range a.Param.samples() {
		if b.Param.Accepts(s) {
			return s, true
		}
	}
	for _, s := range b.Param.samples() {
		if a.Param.Accepts(s) {
			return s, true
		}
	}
	return "", false
}
