// The model of a script's reply: the result type (a scalar, or a struct that
// scripts with one type_name share), the element types of list fields, and the
// runtime.Reply call that reads each field.

package codegen

import (
	"fmt"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
)

// structDecl is a struct type: a result, a list element, a script's Args.
type structDecl struct {
	Doc    comment
	Name   string
	Fields []structField
}

// structField is one field of a struct, with its doc ("" none).
type structField struct {
	Doc  comment
	Name string
	Type goType
}

// elemDecl is the element type of a list field and its decoder.
type elemDecl struct {
	structDecl
	Decoder string
	Reads   []fieldRead
}

// fieldRead assigns out.<Field> the value reader reads.
type fieldRead struct {
	Field string
	Read  reader
}

// readKind is the runtime call that reads a field.
type readKind int

const (
	readValue        readKind = iota // r.<Method>(field)
	readEnum                         // <Enum>(r.Enum(field, <Labels>))
	readNullable                     // runtime.Nullable(r, field, r.<Method>)
	readNullableEnum                 // runtime.Nullable(r, field, func(f string) <Enum> { return <Enum>(r.Enum(f, <Labels>)) })
	readList                         // runtime.List(r, field, <Width>, <Decoder>)
	readListOf                       // runtime.ListOf(r, field, (*runtime.Reply).<Method>)
	readListOfEnum                   // runtime.ListOf(r, field, func(e *runtime.Reply, f string) <Enum> { return <Enum>(e.Enum(f, <Labels>)) })
)

// reader reads one field of a runtime.Reply r.
type reader struct {
	Kind    readKind
	Field   string // the field's name in the reply, which a decode error names
	Method  string // readValue, readNullable: the runtime.Reply method
	Enum    string // enum reads: the Go type
	Labels  string // enum reads: its labels
	Width   int    // readList: the fields of an element
	Decoder string // readList: the element's decoder
	// Ref: the decoder holds r as a value, so runtime.Nullable and runtime.List
	// take &r; an element decoder holds a *runtime.Reply already.
	Ref bool
}

// decodeFunc is decode<Script>: the reply as the declared type.
type decodeFunc struct {
	Name   string
	Script string // the runtime.Script that checks the reply's shape
	Result goType
	Value  *reader // a scalar reply
	Width  int     // an array reply: its fields
	Fields []fieldRead
}

// replyOwner names the result type of a script (element types derive from it).
func replyOwner(s *keyspec.Script) string {
	switch {
	case s.Reply.Value != nil:
		return exported(s.Name)
	case s.Reply.TypeName != "":
		return exported(s.Reply.TypeName)
	}
	return exported(s.Name) + "Result"
}

// resultType is what the wrapper returns.
func resultType(s *keyspec.Script) goType {
	if s.Reply.Value != nil {
		return fieldType(s.Reply.Value, exported(s.Name))
	}
	return named(replyOwner(s))
}

// fieldType is a field's Go type; owner names list element types.
func fieldType(fl *keyspec.Field, owner string) goType {
	switch {
	case fl.Type == keyspec.ReplyList && fl.Of != "":
		return listOfType(fl)
	case fl.Type == keyspec.ReplyList:
		return goType{Name: elemTypeName(fl, owner), Slice: true}
	case fl.Nullable && fl.Type != keyspec.ReplyStrings:
		t := plainFieldType(fl)
		t.Ptr = true
		return t
	}
	return plainFieldType(fl)
}

// listOfType is the Go type of a list field declared with of: a slice of its
// element's type ([]int64, [][]string).
func listOfType(fl *keyspec.Field) goType {
	t := plainFieldType(&keyspec.Field{Type: fl.Of, Enum: fl.Enum})
	if t.Slice {
		t.Name = "[]" + t.Name // bytes, strings: builtin element types
	}
	t.Slice = true
	return t
}

// elemTypeName is the Go type of a list field's elements: its type_name, or the
// owner's type name and the field's.
func elemTypeName(fl *keyspec.Field, owner string) string {
	if fl.TypeName != "" {
		return exported(fl.TypeName)
	}
	return owner + exported(fl.Name) + "Item"
}

func plainFieldType(fl *keyspec.Field) goType {
	switch fl.Type {
	case keyspec.ReplyInt:
		return goType{Name: "int64"}
	case keyspec.ReplyBool:
		return goType{Name: "bool"}
	case keyspec.ReplyBytes:
		return goType{Name: "byte", Slice: true}
	case keyspec.ReplyDurationMS:
		return goType{Pkg: "time", Name: "Duration"}
	case keyspec.ReplyTimeMS:
		return goType{Pkg: "time", Name: "Time"}
	case keyspec.ReplyEnum:
		return named(exported(fl.Enum.Name))
	case keyspec.ReplyStrings:
		return goType{Name: "string", Slice: true}
	}
	return goType{Name: "string"}
}

// replyMethod is the runtime.Reply method that reads a field of type typ.
func replyMethod(typ string) string {
	switch typ {
	case keyspec.ReplyInt:
		return "Int"
	case keyspec.ReplyBool:
		return "Bool"
	case keyspec.ReplyBytes:
		return "Bytes"
	case keyspec.ReplyDurationMS:
		return "Duration"
	case keyspec.ReplyTimeMS:
		return "Time"
	case keyspec.ReplyStrings:
		return "Strings"
	}
	return "String"
}

// readerOf reads field fl of a reply whose type is owner; ref: the decoder holds
// r as a value.
func readerOf(fl *keyspec.Field, owner string, ref bool) reader {
	r := reader{Field: fl.Name, Ref: ref}
	nullable := fl.Nullable && fl.Type != keyspec.ReplyStrings
	switch {
	case fl.Type == keyspec.ReplyList && fl.Of == keyspec.ReplyEnum:
		r.Kind, r.Enum, r.Labels = readListOfEnum, exported(fl.Enum.Name), unexported(fl.Enum.Name)+"Strings"
	case fl.Type == keyspec.ReplyList && fl.Of != "":
		r.Kind, r.Method = readListOf, replyMethod(fl.Of)
	case fl.Type == keyspec.ReplyList:
		r.Kind, r.Width = readList, len(fl.Fields)
		r.Decoder = "decode" + elemTypeName(fl, owner)
	case fl.Type == keyspec.ReplyEnum:
		r.Kind, r.Enum, r.Labels = readEnum, exported(fl.Enum.Name), unexported(fl.Enum.Name)+"Strings"
		if nullable {
			r.Kind = readNullableEnum
		}
	case nullable:
		r.Kind, r.Method = readNullable, replyMethod(fl.Type)
	default:
		r.Kind, r.Method = readValue, replyMethod(fl.Type)
	}
	return r
}

// elemDecls are the element types of the list fields among fields, nested ones
// first, that no script before declared.
func (b *modelBuilder) elemDecls(fields []*keyspec.Field, owner, script string) []elemDecl {
	var out []elemDecl
	for _, fl := range fields {
		if fl.Type != keyspec.ReplyList || fl.Of != "" {
			continue
		}
		t := elemTypeName(fl, owner)
		out = append(out, b.elemDecls(fl.Fields, t, script)...)
		if b.typesDeclared[t] {
			continue
		}
		b.typesDeclared[t] = true
		e := elemDecl{structDecl: structDecl{Doc: wrapped(fmt.Sprintf("%s is an element of %s's reply field %s.", t, script, fl.Name)), Name: t}, Decoder: "decode" + t}
		for _, ef := range fl.Fields {
			e.Fields = append(e.Fields, replyField(ef, t))
			e.Reads = append(e.Reads, fieldRead{Field: exported(ef.Name), Read: readerOf(ef, t, false)})
		}
		b.decls.add(fileScripts, e.Name, e.Decoder)
		out = append(out, e)
	}
	return out
}

// replyField is the struct field of reply field fl in type owner.
func replyField(fl *keyspec.Field, owner string) structField {
	sf := structField{Name: exported(fl.Name), Type: fieldType(fl, owner)}
	if fl.Doc != "" {
		sf.Doc = wrapped(fmt.Sprintf("%s: %s", exported(fl.Name), sentence(fl.Doc)))
	}
	return sf
}

// resultDecl is the result struct of an array reply, when no script before
// declared its type.
func (b *modelBuilder) resultDecl(s *keyspec.Script) *structDecl {
	name := replyOwner(s)
	if s.Reply.Value != nil || b.typesDeclared[name] {
		return nil
	}
	b.typesDeclared[name] = true
	what := "the reply of " + s.Name
	if s.Reply.TypeName != "" {
		var users []string
		for _, sc := range b.scripts {
			if sc.Spec.Reply.TypeName == s.Reply.TypeName {
				users = append(users, sc.Spec.Name)
			}
		}
		what = "the reply of " + strings.Join(users, ", ")
	}
	d := &structDecl{Doc: wrapped(fmt.Sprintf("%s is %s.", name, what)), Name: name}
	for _, fl := range s.Reply.Fields {
		d.Fields = append(d.Fields, replyField(fl, name))
	}
	b.decls.add(fileScripts, name)
	return d
}

// decodeFunc reads s's reply as result, field by field.
func (b *modelBuilder) decodeFunc(s *keyspec.Script, result goType) decodeFunc {
	base := exported(s.Name)
	d := decodeFunc{Name: "decode" + base, Script: base + "Script", Result: result}
	if s.Reply.Value != nil {
		r := readerOf(s.Reply.Value, base, true)
		d.Value = &r
		return d
	}
	d.Width = len(s.Reply.Fields)
	for _, fl := range s.Reply.Fields {
		d.Fields = append(d.Fields, fieldRead{Field: exported(fl.Name), Read: readerOf(fl, replyOwner(s), true)})
	}
	return d
}
