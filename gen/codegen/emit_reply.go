// The reply's code from its model: list element types and their decoders,
// decode<Script>, and the runtime.Reply call of each field.

package codegen

import (
	"github.com/dave/jennifer/jen"
)

func emitElem(f *jen.File, e elemDecl) {
	emitStruct(f, e.structDecl)
	body := []jen.Code{jen.Var().Id("out").Id(e.Name)}
	for _, r := range e.Reads {
		body = append(body, jen.Id("out").Dot(r.Field).Op("=").Add(readCode(r.Read)))
	}
	body = append(body, jen.Return(jen.Id("out")))
	f.Func().Id(e.Decoder).Params(jen.Id("r").Op("*").Qual(runtimePkg, "Reply")).Id(e.Name).Block(body...)
	f.Line()
}

func emitDecode(f *jen.File, d decodeFunc) {
	result := typeCode(d.Result)
	var body []jen.Code
	if d.Value != nil {
		body = append(body,
			jen.Id("r").Op(":=").Id(d.Script).Dot("ValueReply").Call(jen.Id("v")),
			jen.Id("out").Op(":=").Add(readCode(*d.Value)),
		)
	} else {
		body = append(body,
			jen.Id("r").Op(":=").Id(d.Script).Dot("ArrayReply").Call(jen.Id("v"), jen.Lit(d.Width)),
			jen.Var().Id("out").Add(result),
		)
		for _, r := range d.Fields {
			body = append(body, jen.Id("out").Dot(r.Field).Op("=").Add(readCode(r.Read)))
		}
	}
	body = append(body, jen.Return(jen.Id("out"), jen.Id("r").Dot("Err").Call()))
	f.Func().Id(d.Name).Params(jen.Id("v").Any()).Params(result, jen.Error()).Block(body...)
	f.Line()
}

// readCode is the expression that reads one field from the runtime.Reply r.
func readCode(rd reader) jen.Code {
	var rp jen.Code = jen.Id("r")
	if rd.Ref {
		rp = jen.Op("&").Id("r")
	}
	enum := func(field jen.Code) jen.Code {
		return jen.Id(rd.Enum).Call(jen.Id("r").Dot("Enum").Call(field, jen.Id(rd.Labels)))
	}
	switch rd.Kind {
	case readEnum:
		return enum(jen.Lit(rd.Field))
	case readNullable:
		return jen.Qual(runtimePkg, "Nullable").Call(rp, jen.Lit(rd.Field), jen.Id("r").Dot(rd.Method))
	case readNullableEnum:
		fn := jen.Func().Params(jen.Id("f").String()).Id(rd.Enum).Block(jen.Return(enum(jen.Id("f"))))
		return jen.Qual(runtimePkg, "Nullable").Call(rp, jen.Lit(rd.Field), fn)
	case readListOf:
		return jen.Qual(runtimePkg, "ListOf").Call(rp, jen.Lit(rd.Field), jen.Parens(jen.Op("*").Qual(runtimePkg, "Reply")).Dot(rd.Method))
	case readListOfEnum:
		fn := jen.Func().Params(jen.Id("e").Op("*").Qual(runtimePkg, "Reply"), jen.Id("f").String()).Id(rd.Enum).Block(
			jen.Return(jen.Id(rd.Enum).Call(jen.Id("e").Dot("Enum").Call(jen.Id("f"), jen.Id(rd.Labels)))))
		return jen.Qual(runtimePkg, "ListOf").Call(rp, jen.Lit(rd.Field), fn)
	case readList:
		return jen.Qual(runtimePkg, "List").Call(rp, jen.Lit(rd.Field), jen.Lit(rd.Width), jen.Id(rd.Decoder))
	}
	return jen.Id("r").Dot(rd.Method).Call(jen.Lit(rd.Field))
}
