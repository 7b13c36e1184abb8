// <script>Input from its model: each key and argument one runtime.Input call,
// which checks the value and encodes it for KEYS or ARGV; and the key functions
// that read a key out of a KEYS interface.

package codegen

import (
	"github.com/dave/jennifer/jen"
)

func emitInput(f *jen.File, m inputFunc) {
	var params []jen.Code
	nkeys, nargv := countCode(m.NKeys, m.KeysRepeat, jen.Id(m.KeysRepeat)), countCode(m.NArgv, m.ArgvRepeat, jen.Id("a").Dot(m.ArgvRepeat))
	start := jen.Id(m.Script).Dot("Input").Call(nkeys, nargv)
	if m.Prefixed {
		params = append(params, jen.Id("prefix").String())
		start = jen.Id(m.Script).Dot("PrefixedInput").Call(jen.Id("prefix"), nkeys, nargv)
	}
	body := []jen.Code{jen.Id("in").Op(":=").Add(start)}
	for _, k := range m.Keys {
		if k.Repeat != nil {
			params = append(params, jen.Id(k.Param).Index().Id(k.Type))
			body = append(body, repeatKeyCode(k, m)...)
			continue
		}
		params = append(params, jen.Id(k.Param).Id(k.Type))
		body = append(body, keyReadCode(k, m.Prefixed)...)
	}
	for _, c := range m.Same {
		if !c.InLoop {
			body = append(body, sameCode(c))
		}
	}
	if m.ArgsType != "" {
		params = append(params, jen.Id("a").Id(m.ArgsType))
	}
	if m.Shape != "" {
		params = append(params, jen.Id(m.Shape).String())
	}
	for _, a := range m.Args {
		body = append(body, argCode(a, m.Prefixed)...)
	}
	body = append(body, jen.Return(jen.Id("in")))
	f.Func().Id(m.Name).Params(params...).Qual(runtimePkg, "Input").Block(body...)
	f.Line()
}

// countCode is how many KEYS or ARGV a call passes: the fixed positions', and
// the length of the repeating one (slice) when repeat names it.
func countCode(fixed int, repeat string, slice jen.Code) jen.Code {
	switch {
	case repeat == "":
		return jen.Lit(fixed)
	case fixed == 0:
		return jen.Len(slice)
	}
	return jen.Lit(fixed).Op("+").Len(slice)
}

// repeatKeyCode passes every element of a repeating KEYS position, after the
// check of their number, with the shared placeholder checks of each.
func repeatKeyCode(k keyPosition, m inputFunc) []jen.Code {
	count := jen.Id("in").Dot("KeyCount").Call(jen.Lit(k.Spec), jen.Len(jen.Id(k.Param)), jen.Lit(k.Repeat.Min), jen.Lit(k.Repeat.Max))
	loop := keyReadCode(k, m.Prefixed)
	for _, c := range m.Same {
		if c.InLoop {
			loop = append(loop, sameCode(c))
		}
	}
	return []jen.Code{count, jen.For(jen.List(jen.Id("_"), jen.Id(elemVar)).Op(":=").Range().Id(k.Param)).Block(loop...)}
}

// sameCode is the check that two keys hold one value of a shared placeholder.
func sameCode(c sameCheck) jen.Code {
	if c.APart != nil {
		return jen.Id("in").Dot("SamePart").Call(jen.Lit(c.Placeholder), operandCode(c.A), partCode(*c.APart), operandCode(c.B), partCode(*c.BPart))
	}
	return jen.Id("in").Dot("Same").Call(jen.Lit(c.Placeholder), operandCode(c.A), operandCode(c.ASeg), operandCode(c.B), operandCode(c.BSeg))
}

// partCode is a runtime.KeyPart literal.
func partCode(p partRef) jen.Code {
	var lits []jen.Code
	for _, l := range p.Lits {
		lits = append(lits, jen.Lit(l))
	}
	return jen.Qual(runtimePkg, "KeyPart").Values(jen.Dict{jen.Id("Lits"): jen.Index().String().Values(lits...), jen.Id("Index"): jen.Lit(p.Index)})
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
		holder := k.Param
		if k.Repeat != nil {
			holder = elemVar
		}
		out = append(out, jen.List(into...).Op(":=").Id(k.Func.Name).Call(jen.Id(holder)))
	}
	switch {
	case k.Channel:
		return append(out, jen.Id("in").Dot("ChannelKey").Call(jen.Lit(k.Spec), operandCode(k.Name)))
	case prefixed:
		return append(out, jen.Id("in").Dot("PrefixedKey").Call(jen.Lit(k.Spec), operandCode(k.Name), operandCode(k.Prefix)))
	}
	return append(out, jen.Id("in").Dot("Key").Call(jen.Lit(k.Spec), operandCode(k.Name)))
}

// argCode is the runtime.Input calls that check and write one argument: one,
// or for a repeating argument the check of its number and one per value.
func argCode(a argModel, prefixed bool) []jen.Code {
	value := jen.Id("a").Dot(a.Field)
	switch {
	case a.Param != "":
		value = jen.Id(a.Param)
	case a.Repeat != nil:
		value = jen.Id(argElem)
	}
	call := jen.Id("in").Dot(a.Encode.Method)
	var one jen.Code
	switch a.Encode.Kind {
	case encodeConst:
		one = call.Call(jen.Id(a.Encode.Const))
	case encodeNone:
		one = call.Call()
	case encodeFlag:
		one = call.Call(value)
	case encodeChannel:
		one = call.Call(jen.Lit(a.Spec), jen.Add(value).Dot("name"))
	case encodeEnum:
		one = call.Call(jen.Lit(a.Spec), jen.String().Call(value), jen.Add(value).Dot("Valid").Call())
	case encodeKey:
		if prefixed {
			one = jen.Id("in").Dot("PrefixedKeyArg").Call(jen.Lit(a.Spec), jen.Add(value).Dot("key"), jen.Add(value).Dot("p"))
		} else {
			one = call.Call(jen.Lit(a.Spec), jen.Add(value).Dot("key"))
		}
	default:
		one = call.Call(append([]jen.Code{jen.Lit(a.Spec), value}, litCodes(a.Encode.Bounds)...)...)
	}
	if a.Repeat == nil {
		return []jen.Code{one}
	}
	return []jen.Code{
		jen.Id("in").Dot("ArgCount").Call(jen.Lit(a.Spec), jen.Len(jen.Id("a").Dot(a.Field)), jen.Lit(a.Repeat.Min), jen.Lit(a.Repeat.Max)),
		jen.For(jen.List(jen.Id("_"), jen.Id(argElem)).Op(":=").Range().Id("a").Dot(a.Field)).Block(one),
	}
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
