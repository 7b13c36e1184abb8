// The model of a key or channel builder, New<Type>(parts...): each part's Go
// parameter, the check it passes, and the one concatenation that makes the name.

package codegen

import (
	"fmt"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
)

// builderDecl is New<Type>: it checks each part and concatenates the name.
type builderDecl struct {
	Func     string
	Type     string
	Doc      comment
	Entity   string // the key or channel's spec name, which a refusal names
	Prefixed bool   // takes p Prefix first and refuses the zero Prefix
	Params   []partParam
	Name     []namePart // the name: literal runs and parts, in order
	Field    string     // the type's field that holds the name
	HoldsP   bool       // the value also records p's prefix, in p
	Fallible bool       // a part (or the prefix) can be refused: returns (Type, error)
}

// partParam is one placeholder's parameter and its check.
type partParam struct {
	Spec  string // the placeholder's name, which a refusal names
	Var   string // the Go parameter
	Type  goType
	Check partCheck
}

// checkKind is how a builder refuses a bad part.
type checkKind int

const (
	checkNone   checkKind = iota // nothing to refuse (a hashed part)
	checkCall                    // err := runtime.<Func>(entity, part, v, bounds...)
	checkValid                   // !v.Valid(): runtime.EnumPartError
	checkDigest                  // <Digest>, ok := <Table>[v]; !ok: runtime.EnumPartError
)

// partCheck is the check of one part.
type partCheck struct {
	Kind   checkKind
	Func   string    // checkCall: the runtime function
	Bounds []literal // checkCall: after the value
	Digest string    // checkDigest: the local holding the digest
	Table  string    // checkDigest: the value -> digest table
}

// nameKind is what one piece of a name is.
type nameKind int

const (
	nameLiteral   nameKind = iota // Text itself
	nameVar                       // the local or parameter Text
	nameFormatInt                 // strconv.FormatInt(Text, 10)
	nameString                    // string(Text)
	nameSHA256                    // keypart.SHA256(Text)
	namePrefix                    // p.s
)

// namePart is one operand of the name's concatenation.
type namePart struct {
	Kind nameKind
	Text string
}

// builder models fn, the builder of type t whose name field is field, for the
// key or channel name with pattern pat.
func (b *modelBuilder) builder(fn, t, field, name string, pat keyspec.Pattern) builderDecl {
	bd := builderDecl{Func: fn, Type: t, Entity: name, Prefixed: b.prefixed, Field: field, HoldsP: b.prefixed && field == "key"}
	b.decls.add(fileKeys, fn)
	locals := map[string]string{"ok": "a local", "err": "a local"}
	if b.prefixed {
		locals["p"] = "the deployment prefix"
	}
	use := func(id, what string) {
		if other, dup := locals[id]; dup {
			b.errorf("%s of %s: %s and %s both become %q; rename one", fn, pat.Raw, other, what, id)
		}
		locals[id] = what
	}
	parts := map[string]namePart{}
	for _, p := range pat.Params() {
		pp := partParam{Spec: p.Name, Var: paramVar(p), Type: paramGoType(p)}
		use(pp.Var, "{"+p.Name+"}")
		pp.Check, parts[p.Name] = partOf(p, pp.Var)
		if pp.Check.Kind == checkDigest {
			use(pp.Check.Digest, "the digest of {"+p.Name+"}")
		}
		bd.Params = append(bd.Params, pp)
	}
	bd.Name = nameParts(pat, parts, b.prefixed)
	bd.Fallible = b.prefixed
	for _, pp := range bd.Params {
		bd.Fallible = bd.Fallible || pp.Check.Kind != checkNone
	}
	if !bd.Fallible {
		// No part can be refused (none, or only hashed ones): no error to return.
		bd.Doc = wrapped(fmt.Sprintf("%s builds %s.", fn, pat.Raw))
		return bd
	}
	what := pat.Raw
	if b.prefixed {
		what = "p + " + pat.Raw
	}
	tagNote := ""
	if tp := pat.TagParam(); tp != nil {
		tagNote = fmt.Sprintf(" {%s} is the key's hash tag: its value alone picks the Redis Cluster slot.", tp.Name)
	} else if text, ok := pat.TagText(); ok {
		tagNote = fmt.Sprintf(" Its hash tag is {%s}: every such key is in one Redis Cluster slot.", text)
	} else if pat.HasTag() {
		tagNote = fmt.Sprintf(" Its hash tag is {%s}: its placeholders' values pick the Redis Cluster slot.", pat.TagSignature())
	}
	bd.Doc = wrapped(fmt.Sprintf("%s builds %s. Each part is checked against its placeholder's type, so no value can forge another name; the error names the part, never its value.%s", fn, what, tagNote))
	return bd
}

// paramVar is the builder argument for a placeholder: a hashed placeholder takes
// the value before hashing, so "kid_hash" takes "kid".
func paramVar(p *keyspec.Param) string {
	name := p.Name
	if p.Type == keyspec.TypeSHA256 || p.Type == keyspec.TypeEnum && p.Encode == keyspec.EncodeSHA256 {
		name = strings.TrimSuffix(name, "_hash")
	}
	return unexported(name)
}

func paramGoType(p *keyspec.Param) goType {
	switch p.Type {
	case keyspec.TypeInt:
		return goType{Name: "int64"}
	case keyspec.TypeEnum:
		return named(exported(p.Enum.Name))
	case keyspec.TypeHMAC:
		return goType{Pkg: runtimePkg, Name: "HMAC"}
	}
	return goType{Name: "string"}
}

// partOf is how placeholder p, passed as v, is checked and put in the name.
func partOf(p *keyspec.Param, v string) (partCheck, namePart) {
	call := func(fn string, bounds ...literal) partCheck {
		return partCheck{Kind: checkCall, Func: fn, Bounds: bounds}
	}
	switch p.Type {
	case keyspec.TypeUUID:
		return call("CheckUUID"), namePart{nameVar, v}
	case keyspec.TypeInt:
		return call("CheckInt", intLit(p.Min), intLit(p.Max)), namePart{nameFormatInt, v}
	case keyspec.TypeHex:
		return call("CheckHex", countLit(p.Len)), namePart{nameVar, v}
	case keyspec.TypeName:
		return call("CheckName", countLit(p.MaxLen)), namePart{nameVar, v}
	case keyspec.TypePath:
		return call("CheckPath", countLit(p.MaxLen)), namePart{nameVar, v}
	case keyspec.TypeHMAC:
		return call("CheckHMAC"), namePart{nameString, v}
	case keyspec.TypeSHA256:
		return partCheck{}, namePart{nameSHA256, v}
	case keyspec.TypeEnum:
		if p.Encode == keyspec.EncodeSHA256 {
			h := unexported(p.Name)
			return partCheck{Kind: checkDigest, Digest: h, Table: unexported(p.Enum.Name) + "SHA256"}, namePart{nameVar, h}
		}
		return partCheck{Kind: checkValid}, namePart{nameString, v}
	}
	return partCheck{}, namePart{nameVar, v}
}

// nameParts is the name as one concatenation: the prefix, then literal runs
// merged (one allocation) between the parts.
func nameParts(pat keyspec.Pattern, parts map[string]namePart, prefixed bool) []namePart {
	var out []namePart
	if prefixed {
		out = append(out, namePart{Kind: namePrefix})
	}
	lit := ""
	for _, pt := range pat.Parts {
		if pt.Param == nil {
			lit += pt.Literal
			continue
		}
		if lit != "" {
			out = append(out, namePart{nameLiteral, lit})
			lit = ""
		}
		out = append(out, parts[pt.Param.Name])
	}
	if lit != "" {
		out = append(out, namePart{nameLiteral, lit})
	}
	return out
}
