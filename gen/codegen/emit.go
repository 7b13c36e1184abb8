// The emitters' shared pieces: a new file with its header and import names, and
// the jennifer code of the model's comments, types, literals and operands.

package codegen

import (
	"strings"
	"time"

	"github.com/dave/jennifer/jen"
)

func newFile(pkg string) *jen.File {
	f := jen.NewFile(pkg)
	f.HeaderComment(Header)
	f.ImportName(runtimePkg, "runtime")
	f.ImportName(keypartPkg, "keypart")
	f.ImportName(redisPkg, "redis")
	f.ImportName(rueidisPkg, "rueidisbackend")
	return f
}

// docCode renders a comment as // lines; no lines, nothing.
func docCode(c comment) jen.Code {
	if len(c) == 0 {
		return jen.Null()
	}
	return jen.Comment("// " + strings.Join(c, "\n// "))
}

func typeCode(t goType) *jen.Statement {
	name := func(s *jen.Statement) *jen.Statement {
		if t.Pkg != "" {
			return s.Qual(t.Pkg, t.Name)
		}
		return s.Id(t.Name)
	}
	switch {
	case t.Slice && t.Ptr:
		return name(jen.Op("*").Index())
	case t.Slice:
		return name(jen.Index())
	case t.Ptr:
		return name(jen.Op("*"))
	case t.Pkg != "":
		return jen.Qual(t.Pkg, t.Name)
	}
	return jen.Id(t.Name)
}

func litCode(l literal) jen.Code {
	switch l.kind {
	case litInt:
		return jen.Lit(int(l.i)) // an int renders untyped: 5, not int64(5)
	case litDuration:
		return durationCode(l.d)
	case litBool:
		return jen.Lit(l.b)
	}
	return jen.Lit(l.s)
}

func litCodes(ls []literal) []jen.Code {
	out := make([]jen.Code, len(ls))
	for i, l := range ls {
		out[i] = litCode(l)
	}
	return out
}

// durationCode renders d as n * time.Unit with the largest unit that divides it.
func durationCode(d time.Duration) jen.Code {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}} {
		if d != 0 && d%u.d == 0 {
			return jen.Lit(int(d/u.d)).Op("*").Qual("time", u.name)
		}
	}
	return jen.Qual("time", "Duration").Call(jen.Lit(int64(d)))
}

func operandCode(o operand) jen.Code {
	switch {
	case o.ID == "":
		return jen.Lit(o.Int)
	case o.Field != "":
		return jen.Id(o.ID).Dot(o.Field)
	}
	return jen.Id(o.ID)
}

// constDefs renders the entries of a const or var block.
func constDefs(defs []constDef) []jen.Code {
	var out []jen.Code
	for _, d := range defs {
		if len(d.Doc) > 0 {
			out = append(out, docCode(d.Doc))
		}
		s := jen.Id(d.Name)
		if d.Type != "" {
			s = s.Id(d.Type)
		}
		out = append(out, s.Op("=").Add(litCode(d.Value)))
	}
	return out
}

// structFields renders a struct's fields, each after its doc.
func structFields(fields []structField) []jen.Code {
	var out []jen.Code
	for _, fl := range fields {
		if len(fl.Doc) > 0 {
			out = append(out, docCode(fl.Doc))
		}
		out = append(out, jen.Id(fl.Name).Add(typeCode(fl.Type)))
	}
	return out
}
