// <script>Input from its model: each key and argument one runtime.Input call,
// which checks the value and encodes it for KEYS or ARGV; and the key functions
// that read a key out of a KEYS interface.

package codegen

import (
	"github.com/dave/jennifer/jen"
)

func emitInput(f *jen.File, m inputFunc) {
	var params []jen.Code
	start := jen.Id(m.Script).Dot("Input").Call(jen.Lit(m.NKeys), jen.Lit(m.NArgv))
	if m.Prefixed {
		params = append(params, jen.Id("prefix").String())
		start = jen.Id(m.Script).Dot("PrefixedInput").Call(jen.Id("prefix"), jen.Lit(m.NKeys), jen.Lit(m.NArgv))
	}
	body := []jen.Code{jen.Id("in").Op(":=").Add(start)}
	for _, k := range m.Keys {
		params = append(params, jen.Id(k.Param).Id(k.Type))
		body = append(body, keyReadCode(k, m.Prefixed)...)
	}
	for _, c := range m.Same {
		body = append(body, jen.Id("in").Dot("Same").Call(jen.Lit(c.Placeholder), operandCode(c.A), operandCode(c.ASeg), operandCode(c.B), operandCode(c.BSeg)))
	}
	if m.ArgsType != "" {
		params = append(params, jen.Id("a").Id(m.ArgsType))
	}
	for _, a := range m.Args {
		body = append(body, argCode(a))
	}
	body = append(body, jen.Return(jen.Id("in")))
	f.Func().Id(m.Name).Params(params...).Qual(runtimePkg, "Input").Block(body...)
	f.Line()
}

// keyReadCode passes one KEYS position to the Input, reading the key out of
// its interface first when the position has one.
func keyReadCode(k keyPosition, prefixed bool) []jen.Code {
	var out []jen.Code
	if k.Func != nil {
		var into []jen.Code
		for _, l := range k.Into {
			into = append(into, jen.Id(l))
		}
		out = append(out, jen.List(into...).Op(":=").Id(k.Func.Name).Call(jen.Id(k.Param)))
	}
	if prefixed {
		return append(out, jen.Id("in").Dot("PrefixedKey").Call(jen.Lit(k.Spec), operandCode(k.Name), operandCode(k.Prefix)))
	}
	return append(out, jen.Id("in").Dot("Key").Call(jen.Lit(k.Spec), operandCode(k.Name)))
}

// argCode is the runtime.Input call that checks and writes one argument.
func argCode(a argModel) jen.Code {
	call := jen.Id("in").Dot(a.Encode.Method)
	switch a.Encode.Kind {
	case encodeConst:
		return call.Call(jen.Id(a.Encode.Const))
	case encodeFlag:
		return call.Call(jen.Id("a").Dot(a.Field))
	}
	args := append([]jen.Code{jen.Lit(a.Spec), jen.Id("a").Dot(a.Field)}, litCodes(a.Encode.Bounds)...)
	return call.Call(args...)
}

// emitKeyFunc writes a function that reads the key out of a KEYS interface:
// its name, its prefix and its shared placeholders' segments, or the zero
// values for anything but the declared key types themselves.
func emitKeyFunc(f *jen.File, kf *keyFunc) {
	results := []jen.Code{jen.String()}
	zero := []jen.Code{jen.Lit("")}
	if kf.Prefixed {
		results = append(results, jen.String())
		zero = append(zero, jen.Lit(""))
	}
	for range kf.Segments {
		results = append(results, jen.Int())
		zero = append(zero, jen.Lit(0))
	}
	var cases []jen.Code
	for _, c := range kf.Cases {
		ret := []jen.Code{jen.Id("k").Dot("key")}
		if kf.Prefixed {
			ret = append(ret, jen.Id("k").Dot("p"))
		}
		for _, seg := range c.Segments {
			ret = append(ret, jen.Lit(seg))
		}
		cases = append(cases, jen.Case(jen.Id(c.Type)).Block(jen.Return(ret...)))
	}
	f.Add(docCode(kf.Doc))
	f.Func().Id(kf.Name).Params(jen.Id("k").Any()).Params(results...).Block(
		jen.Switch(jen.Id("k").Op(":=").Id("k").Assert(jen.Type())).Block(cases...),
		jen.Return(zero...),
	)
	f.Line()
}
