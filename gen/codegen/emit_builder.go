// New<Type> from its model: the checks of the parts, then the name.

package codegen

import (
	"github.com/dave/jennifer/jen"
)

func emitBuilder(f *jen.File, bd builderDecl) {
	zero := jen.Id(bd.Type).Values()
	var sig, body []jen.Code
	if bd.Prefixed {
		sig = append(sig, jen.Id("p").Id("Prefix"))
		body = append(body, jen.If(jen.Id("p").Dot("s").Op("==").Lit("")).Block(jen.Return(zero, jen.Qual(runtimePkg, "NoPrefix").Call(jen.Lit(bd.Entity)))))
	}
	for _, p := range bd.Params {
		sig = append(sig, jen.Id(p.Var).Add(typeCode(p.Type)))
		body = append(body, partCheckCode(bd, p, zero)...)
	}
	dict := jen.Dict{jen.Id(bd.Field): nameCode(bd.Name)}
	if bd.HoldsP {
		dict[jen.Id("p")] = jen.Id("p").Dot("s")
	}
	value := jen.Id(bd.Type).Values(dict)
	f.Add(docCode(bd.Doc))
	if !bd.Fallible {
		f.Func().Id(bd.Func).Params(sig...).Id(bd.Type).Block(jen.Return(value))
		f.Line()
		return
	}
	body = append(body, jen.Return(value, jen.Nil()))
	f.Func().Id(bd.Func).Params(sig...).Params(jen.Id(bd.Type), jen.Error()).Block(body...)
	f.Line()
}

// partCheckCode is the statements that refuse a bad part p; nil when none can be.
func partCheckCode(bd builderDecl, p partParam, zero jen.Code) []jen.Code {
	refuse := jen.Return(zero, jen.Qual(runtimePkg, "EnumPartError").Call(jen.Lit(bd.Entity), jen.Lit(p.Spec)))
	switch c := p.Check; c.Kind {
	case checkCall:
		args := append([]jen.Code{jen.Lit(bd.Entity), jen.Lit(p.Spec), jen.Id(p.Var)}, litCodes(c.Bounds)...)
		return []jen.Code{jen.If(jen.Err().Op(":=").Qual(runtimePkg, c.Func).Call(args...), jen.Err().Op("!=").Nil()).Block(jen.Return(zero, jen.Err()))}
	case checkValid:
		return []jen.Code{jen.If(jen.Op("!").Id(p.Var).Dot("Valid").Call()).Block(refuse)}
	case checkDigest:
		return []jen.Code{
			jen.List(jen.Id(c.Digest), jen.Id("ok")).Op(":=").Id(c.Table).Index(jen.Id(p.Var)),
			jen.If(jen.Op("!").Id("ok")).Block(refuse),
		}
	}
	return nil
}

// nameCode is the name's concatenation.
func nameCode(parts []namePart) jen.Code {
	var expr *jen.Statement
	for _, p := range parts {
		c := namePartCode(p)
		if expr == nil {
			expr = jen.Add(c)
		} else {
			expr = expr.Op("+").Add(c)
		}
	}
	return expr
}

func namePartCode(p namePart) jen.Code {
	switch p.Kind {
	case nameLiteral:
		return jen.Lit(p.Text)
	case nameFormatInt:
		return jen.Qual("strconv", "FormatInt").Call(jen.Id(p.Text), jen.Lit(10))
	case nameString:
		return jen.String().Call(jen.Id(p.Text))
	case nameSHA256:
		return jen.Qual(keypartPkg, "SHA256").Call(jen.Id(p.Text))
	case namePrefix:
		return jen.Id("p").Dot("s")
	}
	return jen.Id(p.Text)
}
