// One script's declarations from its model, in order: its runtime.Script, the
// interfaces of its KEYS positions, its Args, its reply types, its key functions,
// input and decode functions, its wrapper and batch form.

package codegen

import (
	"github.com/dave/jennifer/jen"
)

func emitScript(f *jen.File, s scriptDecl) {
	emitScriptValue(f, s.Value)
	for _, ki := range s.Ifaces {
		f.Add(docCode(ki.Doc))
		f.Type().Id(ki.Type).Interface(jen.Id("String").Params().String(), jen.Id(ki.Marker).Params())
		f.Line()
		for _, t := range ki.KeyTypes {
			f.Func().Params(jen.Id(t)).Id(ki.Marker).Params().Block()
		}
		f.Line()
	}
	if s.Args != nil {
		emitStruct(f, *s.Args)
	}
	for _, e := range s.Elems {
		emitElem(f, e)
	}
	if s.Result != nil {
		emitStruct(f, *s.Result)
	}
	for _, kf := range s.KeyFuncs {
		emitKeyFunc(f, kf)
	}
	emitInput(f, s.Input)
	if s.Shapes == nil {
		emitDecode(f, s.Decode)
		emitWrapper(f, s.Wrapper)
		return
	}
	for _, sh := range s.Shapes {
		for _, e := range sh.Elems {
			emitElem(f, e)
		}
		if sh.Result != nil {
			emitStruct(f, *sh.Result)
		}
		emitDecode(f, sh.Decode)
		emitWrapper(f, sh.Wrapper)
	}
}

func emitScriptValue(f *jen.File, v scriptValue) {
	args := []jen.Code{jen.Lit(v.Name), jen.Id(v.Source), jen.Id(v.SHA1)}
	ctor := "MustScript"
	if v.Mode == modeFunction {
		ctor = "MustFunction"
		args = append(args, jen.Lit(v.Function))
	}
	args = append(args, jen.Lit(v.ReadOnly))
	for _, o := range v.Options {
		args = append(args, jen.Qual(runtimePkg, o))
	}
	f.Add(docCode(v.Doc))
	f.Var().Id(v.Var).Op("=").Qual(runtimePkg, ctor).Call(args...)
	f.Line()
}

func emitStruct(f *jen.File, d structDecl) {
	f.Add(docCode(d.Doc))
	f.Type().Id(d.Name).Struct(structFields(d.Fields)...)
	f.Line()
}

// emitWrapper writes Scripts.<Script> and Queue<Script>, a method of Scripts
// where the Scripts hold the deployment prefix.
func emitWrapper(f *jen.File, w wrapperDecl) {
	params := []jen.Code{jen.Id("ctx").Qual("context", "Context")}
	var callIn []jen.Code
	if w.Prefixed {
		callIn = append(callIn, jen.Id("s").Dot("prefix"))
	}
	for _, k := range w.Keys {
		if k.Repeat != nil {
			params = append(params, jen.Id(k.Param).Index().Id(k.Type))
		} else {
			params = append(params, jen.Id(k.Param).Id(k.Type))
		}
		callIn = append(callIn, jen.Id(k.Param))
	}
	if w.ArgsType != "" {
		params = append(params, jen.Id("args").Id(w.ArgsType))
		callIn = append(callIn, jen.Id("args"))
	}
	if w.Shape != nil {
		callIn = append(callIn, jen.Lit(*w.Shape))
	}
	result := typeCode(w.Result)
	f.Add(docCode(w.Doc))
	f.Func().Params(jen.Id("s").Op("*").Id("Scripts")).Id(w.Method).Params(params...).Params(result, jen.Error()).Block(
		jen.Return(jen.Qual(runtimePkg, "Run").Call(jen.Id("ctx"), jen.Id("s").Dot(w.DB), jen.Id(w.Input).Call(callIn...), jen.Id(w.Decode))),
	)
	f.Line()
	qparams := append([]jen.Code{jen.Id("b").Op("*").Qual(runtimePkg, "Batch")}, params[1:]...)
	f.Add(docCode(w.QueueDoc))
	fn := f.Func()
	if w.Prefixed {
		fn = fn.Params(jen.Id("s").Op("*").Id("Scripts"))
	}
	fn.Id(w.Queue).Params(qparams...).Op("*").Qual(runtimePkg, "Pending").Types(result).Block(
		jen.Return(jen.Qual(runtimePkg, "Queue").Call(jen.Id("b"), jen.Id(w.Input).Call(callIn...), jen.Id(w.Decode))),
	)
	f.Line()
}
