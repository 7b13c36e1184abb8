package breaking

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
)

// encoding is how a placeholder's value becomes key text: "hash" for the
// types a key holds as a digest of the value, the enum's encoding, else "text".
func encoding(p *keyspec.Param) string {
	switch p.Type {
	case keyspec.TypeSHA256:
		return "sha256 of the value"
	case keyspec.TypeEnum:
		if p.Encode == keyspec.EncodeSHA256 {
			return "sha256 of the label"
		}
		return "the label"
	}
	return "the value"
}

// placeholderEncodingChanged says how the text a placeholder writes into the
// key changed for the same value, or "".
func placeholderEncodingChanged(o, n *keyspec.Param) string {
	if eo, en := encoding(o), encoding(n); eo != en {
		return fmt.Sprintf("writes %s into the key, was %s: the same call now makes another key", en, eo)
	}
	return ""
}

// nameChars reports whether s is made of a name placeholder's characters.
func nameChars(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return s != ""
}

// paramNarrowed says how placeholder n accepts fewer values than o (same
// encoding), or "": values the previous release stored under keys, which the
// new key builders refuse, are out of reach.
func paramNarrowed(o, n *keyspec.Param) string {
	if o.Type != n.Type {
		if n.Type == keyspec.TypeName || n.Type == keyspec.TypePath {
			// A path takes what a name does, and ':' too.
			wide := false
			switch o.Type {
			case keyspec.TypeName:
				wide = n.Type == keyspec.TypePath && n.MaxLen >= o.MaxLen
			case keyspec.TypeUUID:
				wide = n.MaxLen >= 36
			case keyspec.TypeHex:
				wide = n.MaxLen >= o.Len
			case keyspec.TypeInt:
				wide = n.MaxLen >= max(len(strconv.FormatInt(o.Min, 10)), len(strconv.FormatInt(o.Max, 10)))
			case keyspec.TypeEnum:
				wide = o.Encode != keyspec.EncodeSHA256
				for _, v := range o.Enum.Values {
					wide = wide && nameChars(v) && len(v) <= n.MaxLen
				}
			}
			if wide {
				return ""
			}
		}
		return fmt.Sprintf("type %s -> %s", o.Type, n.Type)
	}
	switch o.Type {
	case keyspec.TypeInt:
		if n.Min > o.Min || n.Max < o.Max {
			return fmt.Sprintf("range %d..%d -> %d..%d", o.Min, o.Max, n.Min, n.Max)
		}
	case keyspec.TypeHex:
		if n.Len != o.Len {
			return fmt.Sprintf("len %d -> %d", o.Len, n.Len)
		}
	case keyspec.TypeName, keyspec.TypePath:
		if n.MaxLen < o.MaxLen {
			return fmt.Sprintf("max_len %d -> %d", o.MaxLen, n.MaxLen)
		}
	case keyspec.TypeEnum:
		if gone := missing(o.Enum.Values, n.Enum.Values); len(gone) > 0 {
			return fmt.Sprintf("enum %s loses %s", n.Enum.Name, strings.Join(gone, ", "))
		}
	}
	return ""
}

// argNarrowed says how ARGV n accepts less than o, or "": a caller of the
// previous release may send what the new script refuses, or omit it.
func argNarrowed(o, n *keyspec.Arg) string {
	if o.Type != n.Type {
		// Any text fits a string or bytes argument within its size; an int64
		// takes every int.
		if (n.Type == keyspec.ArgString || n.Type == keyspec.ArgBytes) && o.Type != keyspec.ArgBytes && (o.MaxBytes == 0 || n.MaxBytes >= o.MaxBytes) && n.MaxBytes >= 64 {
			return ""
		}
		if o.Type == keyspec.ArgInt && n.Type == keyspec.ArgInt64 {
			return ""
		}
		if o.Type == keyspec.ArgChannel || n.Type == keyspec.ArgChannel {
			return "" // script-position-changed says what the position carries
		}
		return fmt.Sprintf("type %s -> %s", o.Type, n.Type)
	}
	var why []string
	if o.Optional && !n.Optional {
		why = append(why, "optional -> required")
	}
	switch o.Type {
	case keyspec.ArgInt:
		if n.Min > o.Min || n.Max < o.Max {
			why = append(why, fmt.Sprintf("range %d..%d -> %d..%d", o.Min, o.Max, n.Min, n.Max))
		}
	case keyspec.ArgDurationMS:
		if o.TTLOf == nil && n.TTLOf == nil && (n.MinDur > o.MinDur || n.MaxDur < o.MaxDur) {
			why = append(why, fmt.Sprintf("range %s..%s -> %s..%s", dur(o.MinDur), dur(o.MaxDur), dur(n.MinDur), dur(n.MaxDur)))
		}
	case keyspec.ArgString, keyspec.ArgBytes:
		if n.MaxBytes < o.MaxBytes {
			why = append(why, fmt.Sprintf("max_bytes %d -> %d", o.MaxBytes, n.MaxBytes))
		}
	case keyspec.ArgHex:
		if n.Len != o.Len {
			why = append(why, fmt.Sprintf("len %d -> %d", o.Len, n.Len))
		}
	case keyspec.ArgName:
		if n.MaxLen < o.MaxLen {
			why = append(why, fmt.Sprintf("max_len %d -> %d", o.MaxLen, n.MaxLen))
		}
	case keyspec.ArgEnum:
		if o.Enum != nil && n.Enum != nil {
			if gone := missing(o.Enum.Values, n.Enum.Values); len(gone) > 0 {
				why = append(why, fmt.Sprintf("enum values %s dropped", strings.Join(gone, ", ")))
			}
		}
	}
	return strings.Join(why, ", ")
}

// fieldWidened says how reply field n may hold what a decoder of o refuses,
// or "": a caller of the previous release cannot read the new reply.
func fieldWidened(o, n *keyspec.Field) string {
	var why []string
	if o.Type != n.Type {
		why = append(why, fmt.Sprintf("type %s -> %s", o.Type, n.Type))
	} else {
		if o.Type == keyspec.ReplyEnum && o.Enum != nil && n.Enum != nil {
			if added := missing(n.Enum.Values, o.Enum.Values); len(added) > 0 {
				why = append(why, fmt.Sprintf("enum %s gains %s", n.Enum.Name, strings.Join(added, ", ")))
			}
		}
		if o.Type == keyspec.ReplyList && o.Of != n.Of {
			why = append(why, fmt.Sprintf("elements: of %s -> %s", ofText(o), ofText(n)))
		} else if o.Type == keyspec.ReplyList && o.Of == keyspec.ReplyEnum && o.Enum != nil && n.Enum != nil {
			if added := missing(n.Enum.Values, o.Enum.Values); len(added) > 0 {
				why = append(why, fmt.Sprintf("elements: enum %s gains %s", n.Enum.Name, strings.Join(added, ", ")))
			}
		} else if o.Type == keyspec.ReplyList {
			if d := fieldsChanged(o.Fields, n.Fields); d != "" {
				why = append(why, "elements: "+d)
			}
		}
	}
	if n.Nullable && !o.Nullable {
		why = append(why, "now nullable")
	}
	return strings.Join(why, ", ")
}

// ofText is a list's element type: of's type, or "fields" for a list of arrays.
func ofText(f *keyspec.Field) string {
	if f.Of == "" {
		return "fields"
	}
	return f.Of
}

// fieldsChanged compares two field lists position by position (a field's
// name is not on the wire: a name that moved to another position is a
// reorder, one that is gone a rename).
func fieldsChanged(o, n []*keyspec.Field) string {
	var names []string
	for _, f := range n {
		names = append(names, f.Name)
	}
	var why []string
	for i, of := range o {
		if i >= len(n) {
			why = append(why, fmt.Sprintf("field %d (%s) removed", i+1, of.Name))
			continue
		}
		if j := slices.Index(names, of.Name); j >= 0 && j != i {
			why = append(why, fmt.Sprintf("field %d is %s, was %s (now field %d: reordered)", i+1, n[i].Name, of.Name, j+1))
			continue
		}
		if d := fieldWidened(of, n[i]); d != "" {
			why = append(why, fmt.Sprintf("field %d %s: %s", i+1, of.Name, d))
		}
	}
	for i := len(o); i < len(n); i++ {
		why = append(why, fmt.Sprintf("field %d (%s) added: a decoder of the previous release wants exactly %d", i+1, n[i].Name, len(o)))
	}
	return strings.Join(why, "; ")
}
