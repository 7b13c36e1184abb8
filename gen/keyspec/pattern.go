package keyspec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hanchat/luagen/runtime/keypart"
)

// Pattern is a key or channel pattern such as "han:rt:conn:{connection_id}". Its
// ':'-separated segments are each literal text, exactly one placeholder, or one
// placeholder inside a Redis Cluster hash tag ("{{user_id}}", written in the key
// as "{<value>}"), which makes the slot depend on that placeholder alone.
type Pattern struct {
	Raw      string
	Segments []Segment
}

// Segment is one ':'-separated part of a pattern.
type Segment struct {
	Literal string
	Param   *Param // nil for a literal segment
	Tag     bool   // the placeholder is the pattern's hash tag: "{" value "}"
}

// TagParam is the placeholder inside the pattern's hash tag, or nil.
func (p Pattern) TagParam() *Param {
	for _, s := range p.Segments {
		if s.Tag {
			return s.Param
		}
	}
	return nil
}

// Index is the position of the named placeholder's segment, or -1.
func (p Pattern) Index(name string) int {
	for i, s := range p.Segments {
		if s.Param != nil && s.Param.Name == name {
			return i
		}
	}
	return -1
}

// Params lists the pattern's placeholders in order.
func (p Pattern) Params() []*Param {
	var out []*Param
	for _, s := range p.Segments {
		if s.Param != nil {
			out = append(out, s.Param)
		}
	}
	return out
}

// LiteralPrefix is the text before the first placeholder, the part an ACL pattern
// or a SCAN MATCH can rely on.
func (p Pattern) LiteralPrefix() string {
	var b strings.Builder
	for i, s := range p.Segments {
		if s.Param != nil {
			return b.String()
		}
		b.WriteString(s.Literal)
		if i < len(p.Segments)-1 {
			b.WriteByte(':')
		}
	}
	return b.String()
}

// Family is the pattern's family as an ACL glob: its first segment and ":*"
// ("cache:*" of cache:{name}), the pattern itself when it is one literal
// segment, "" when its first segment is a placeholder.
func (p Pattern) Family() string {
	if len(p.Segments) == 0 || p.Segments[0].Param != nil {
		return ""
	}
	if len(p.Segments) == 1 {
		return p.Segments[0].Literal
	}
	return p.Segments[0].Literal + ":*"
}

// Glob is the pattern with each placeholder replaced by '*', usable as an ACL key
// pattern or SCAN MATCH. A pattern without placeholders is its own glob.
func (p Pattern) Glob() string {
	parts := make([]string, len(p.Segments))
	for i, s := range p.Segments {
		if s.Tag {
			parts[i] = "{*}"
		} else if s.Param != nil {
			parts[i] = "*"
		} else {
			parts[i] = s.Literal
		}
	}
	return strings.Join(parts, ":")
}

// Example is a concrete name the pattern produces, each placeholder holding a
// valid value: a key for ACL checks and documentation.
func (p Pattern) Example() string {
	parts := make([]string, len(p.Segments))
	for i, s := range p.Segments {
		if s.Param == nil {
			parts[i] = s.Literal
			continue
		}
		samples := s.Param.samples()
		if s.Param.Type == TypeName {
			samples = []string{"name"}
		}
		parts[i] = samples[len(samples)-1]
		if s.Tag {
			parts[i] = "{" + parts[i] + "}"
		}
	}
	return strings.Join(parts, ":")
}

// literalOK reports whether text may appear literally in a key: nothing a glob, a
// hash tag or a separator would read.
func literalOK(s string) bool { return keypart.Name(s, len(s)) }

// parsePattern splits raw into segments; params are looked up by name.
func parsePattern(raw string, params map[string]*Param) (Pattern, error) {
	p := Pattern{Raw: raw}
	if raw == "" {
		return p, fmt.Errorf("pattern is empty")
	}
	seen := map[string]bool{}
	tags := 0
	for i, seg := range strings.Split(raw, ":") {
		tag := false
		if strings.HasPrefix(seg, "{{") && strings.HasSuffix(seg, "}}") && len(seg) > 4 {
			seg, tag = seg[1:len(seg)-1], true
			if tags++; tags > 1 {
				return p, fmt.Errorf("segment %d %q: a second hash tag; Redis hashes only the first, so a pattern has at most one", i+1, "{"+seg+"}")
			}
		}
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			name := seg[1 : len(seg)-1]
			if !identOK(name) {
				return p, fmt.Errorf("segment %d %q: placeholder name must be [a-z][a-z0-9_]*", i+1, seg)
			}
			if seen[name] {
				return p, fmt.Errorf("placeholder {%s} appears twice", name)
			}
			seen[name] = true
			prm, ok := params[name]
			if !ok {
				return p, fmt.Errorf("placeholder {%s} has no type: declare it under params", name)
			}
			p.Segments = append(p.Segments, Segment{Param: prm, Tag: tag})
			continue
		}
		if !literalOK(seg) {
			return p, fmt.Errorf("segment %d %q: a segment is literal [A-Za-z0-9._-]+, exactly one {placeholder}, or one placeholder in a hash tag {{placeholder}}", i+1, seg)
		}
		p.Segments = append(p.Segments, Segment{Literal: seg})
	}
	for name := range params {
		if !seen[name] {
			return p, fmt.Errorf("param %q does not appear in the pattern", name)
		}
	}
	return p, nil
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
	case TypeEnum:
		var out []string
		for _, v := range p.Enum.Values {
			out = append(out, p.EncodedValue(v))
		}
		return out
	}
	return nil
}

// overlapWitness returns a concrete key both patterns match, or "" when none can.
func overlapWitness(a, b Pattern) string {
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
