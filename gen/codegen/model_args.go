// The model of a script's ARGV: per position, where the value comes from (a
// field of <Script>Args, or a constant of the spec) and the runtime.Input call
// that checks and encodes it.

package codegen

import (
	"fmt"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
)

// argModel is one ARGV position.
type argModel struct {
	Spec   string // the argument's name in the spec, which a refusal names
	Index  int    // its 1-based ARGV position
	Field  string // its field in <Script>Args; "" when the spec supplies the value
	Encode argEncoder
	// Repeat: the field is a slice, each element encoded (Encode's value is
	// the loop's element), its length within Min..Max.
	Repeat *keyspec.Repeat
	// Param is set for the argument that chooses the reply's shape: the input
	// function's parameter that holds its value, instead of a field.
	Param string
}

// argElem is the loop variable over a repeating argument's values.
const argElem = "v"

// encoderKind is the shape of the runtime.Input call that writes an argument.
type encoderKind int

const (
	encodeChecked encoderKind = iota // in.<Method>(spec, a.<Field>, bounds...): refuses a value out of bounds
	encodeFlag                       // in.<Method>(a.<Field>): a bool, nothing to refuse
	encodeConst                      // in.<Method>(<Const>): a constant of the package (a key's TTL, its max_len)
	encodeNone                       // in.<Method>(): a value of no one's (an unused argument's "")
	encodeChannel                    // in.<Method>(spec, a.<Field>.name): a channel's name
	encodeEnum                       // in.<Method>(spec, string(a.<Field>), a.<Field>.Valid()): an enum's value
	encodeKey                        // in.KeyArg(spec, a.<Field>.key): a declared key's name (PrefixedKeyArg with its prefix)
)

// argEncoder is the runtime.Input call that checks an argument and writes it
// to ARGV.
type argEncoder struct {
	Kind   encoderKind
	Method string    // Int, OptString, Millis, ...
	Bounds []literal // encodeChecked: after the value (min and max, a length, a size)
	Const  string    // encodeConst: the constant passed
}

// args models s's ARGV, and the fields of <Script>Args for those the caller
// passes (a ttl_of argument is the key's TTL, from the spec).
func (b *modelBuilder) args(s *keyspec.Script) ([]argModel, []structField) {
	var out []argModel
	var fields []structField
	for i, a := range s.Argv {
		am := argModel{Spec: a.Name, Index: i + 1, Repeat: a.Repeat}
		switch {
		case s.Reply.ByArg == a:
			am.Param = shapeParam
		case a.TTLOf == nil && a.MaxLenOf == nil && a.Unused == "":
			am.Field = exported(a.Name)
			fields = append(fields, structField{Doc: argDoc(a, am.Index), Name: am.Field, Type: argGoType(a)})
		}
		enc, ok := encoderOf(a)
		if !ok {
			b.errorf("script %s: argument %s: no encoding for type %q", s.Name, a.Name, a.Type)
			continue
		}
		am.Encode = enc
		out = append(out, am)
	}
	return out, fields
}

// argDoc is the doc of a caller's argument field, "" when it has none.
func argDoc(a *keyspec.Arg, index int) comment {
	d := sentence(a.Doc)
	if r := a.Repeat; r != nil {
		d = strings.TrimSpace(d + fmt.Sprintf(" %d..%d values, each its own ARGV from ARGV[%d] on.", r.Min, r.Max, index))
	}
	if a.Exact64() {
		d = strings.TrimSpace(d + " Sent as exact decimal text: the script passes it through (Lua numbers are exact only within 2^53).")
	}
	if a.Optional {
		d = strings.TrimSpace(d + fmt.Sprintf(" Optional: nil sends an empty ARGV[%d], which no present value encodes to.", index))
		if a.Type == keyspec.ArgString || a.Type == keyspec.ArgBytes {
			d += " A present value must not be empty."
		}
	}
	if d == "" {
		return nil
	}
	return wrapped(fmt.Sprintf("%s: %s", exported(a.Name), d))
}

// encoderOf is how a's value is checked and encoded; an optional argument's
// method is the Opt form, which sends "" for nil.
func encoderOf(a *keyspec.Arg) (argEncoder, bool) {
	switch {
	case a.TTLOf != nil:
		return argEncoder{Kind: encodeConst, Method: "Millis", Const: exported(a.TTLOf.Name) + "TTL"}, true
	case a.MaxLenOf != nil:
		return argEncoder{Kind: encodeConst, Method: "Const", Const: exported(a.MaxLenOf.Name) + "MaxLen"}, true
	case a.Unused != "":
		return argEncoder{Kind: encodeNone, Method: "Unused"}, true
	case a.Channel != nil:
		return argEncoder{Kind: encodeChannel, Method: "Channel"}, true
	}
	opt := ""
	if a.Optional {
		opt = "Opt"
	}
	checked := func(method string, bounds ...literal) (argEncoder, bool) {
		return argEncoder{Kind: encodeChecked, Method: opt + method, Bounds: bounds}, true
	}
	switch a.Type {
	case keyspec.ArgBool:
		return argEncoder{Kind: encodeFlag, Method: opt + "Bool"}, true
	case keyspec.ArgInt, keyspec.ArgInt64:
		return checked("Int", intLit(a.Min), intLit(a.Max))
	case keyspec.ArgDurationMS:
		return checked("Duration", durOrZeroLit(a.MinDur), durOrZeroLit(a.MaxDur))
	case keyspec.ArgString:
		return checked("String", countLit(a.MaxBytes))
	case keyspec.ArgBytes:
		return checked("Bytes", countLit(a.MaxBytes))
	case keyspec.ArgToken:
		return checked("Token")
	case keyspec.ArgHex:
		return checked("Hex", countLit(a.Len))
	case keyspec.ArgUUID:
		return checked("UUID")
	case keyspec.ArgName:
		return checked("Name", countLit(a.MaxLen))
	case keyspec.ArgKey:
		if a.Key == nil {
			return argEncoder{}, false
		}
		return argEncoder{Kind: encodeKey, Method: "KeyArg"}, true
	case keyspec.ArgEnum:
		if a.Enum == nil {
			return argEncoder{}, false
		}
		return argEncoder{Kind: encodeEnum, Method: "Enum"}, true
	}
	return argEncoder{}, false
}

// argGoType is the Go type of a caller's argument: a pointer when optional
// (bytes: nil is the absent value already).
func argGoType(a *keyspec.Arg) goType {
	var t goType
	switch a.Type {
	case keyspec.ArgInt, keyspec.ArgInt64:
		t = goType{Name: "int64"}
	case keyspec.ArgBool:
		t = goType{Name: "bool"}
	case keyspec.ArgChannel:
		t = named(exported(a.Channel.Name) + "Channel")
	case keyspec.ArgBytes:
		if a.Repeat != nil {
			return goType{Name: "[]byte", Slice: true}
		}
		return goType{Name: "byte", Slice: true}
	case keyspec.ArgDurationMS:
		t = goType{Pkg: "time", Name: "Duration"}
	case keyspec.ArgKey:
		if a.Key != nil {
			return goType{Name: keyTypeName(a.Key)}
		}
		t = goType{Name: "string"}
	case keyspec.ArgEnum:
		t = goType{Name: "string"}
		if a.Enum != nil {
			t = named(exported(a.Enum.Name))
		}
	default:
		t = goType{Name: "string"}
	}
	t.Ptr = a.Optional
	t.Slice = a.Repeat != nil
	return t
}

// shapeParam is the input function's parameter that takes the value of the
// argument choosing the reply's shape.
const shapeParam = "shape"
