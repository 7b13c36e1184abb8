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
}

// encoderKind is the shape of the runtime.Input call that writes an argument.
type encoderKind int

const (
	encodeChecked encoderKind = iota // in.<Method>(spec, a.<Field>, bounds...): refuses a value out of bounds
	encodeFlag                       // in.<Method>(a.<Field>): a bool, nothing to refuse
	encodeConst                      // in.<Method>(<Const>): a constant of the package (a key's TTL)
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
		am := argModel{Spec: a.Name, Index: i + 1}
		if a.TTLOf == nil {
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
	if a.TTLOf != nil {
		return argEncoder{Kind: encodeConst, Method: "Millis", Const: exported(a.TTLOf.Name) + "TTL"}, true
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
	case keyspec.ArgInt:
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
	}
	return argEncoder{}, false
}

// argGoType is the Go type of a caller's argument: a pointer when optional
// (bytes: nil is the absent value already).
func argGoType(a *keyspec.Arg) goType {
	var t goType
	switch a.Type {
	case keyspec.ArgInt:
		t = goType{Name: "int64"}
	case keyspec.ArgBool:
		t = goType{Name: "bool"}
	case keyspec.ArgBytes:
		return goType{Name: "byte", Slice: true}
	case keyspec.ArgDurationMS:
		t = goType{Pkg: "time", Name: "Duration"}
	default:
		t = goType{Name: "string"}
	}
	t.Ptr = a.Optional
	return t
}
