// scripts.go from its model: the frame (Clients, Scripts, NewScripts,
// AllScripts, the error codes), then each script's declarations.

package codegen

import (
	"github.com/dave/jennifer/jen"
)

func emitScripts(pkg string, m scriptsFile) *jen.File {
	f := newFile(pkg)
	emitClients(f, m)
	emitNewScripts(f, m.NewScripts)
	var all []jen.Code
	for _, s := range m.All {
		all = append(all, jen.Line().Id(s))
	}
	all = append(all, jen.Line())
	f.Add(docCode(m.AllDoc))
	f.Func().Id("AllScripts").Params().Index().Op("*").Qual(runtimePkg, "Script").Block(
		jen.Return(jen.Index().Op("*").Qual(runtimePkg, "Script").Values(all...)),
	)
	f.Line()
	if len(m.Errors) > 0 {
		var defs []jen.Code
		for _, e := range m.Errors {
			defs = append(defs, docCode(e.Doc), jen.Id(e.Name).Op("=").Qual(runtimePkg, "ErrorCode").Call(jen.Lit(e.Code)))
		}
		f.Var().Defs(defs...)
		f.Line()
	}
	for _, s := range m.Scripts {
		emitScript(f, s)
	}
	return f
}

// emitClients writes Clients, Scripts and, with a deployment prefix, Option and WithPrefix.
func emitClients(f *jen.File, m scriptsFile) {
	var fields []jen.Code
	for _, c := range m.Clients {
		fields = append(fields, docCode(c.Doc), jen.Id(c.Name).Add(typeCode(c.Type)))
	}
	fields = append(fields, docCode(wrapped("Observer, when set, sees every call the wrappers send (runtime/scriptmetrics exports them to Prometheus); nil measures nothing.")), jen.Id("Observer").Qual(runtimePkg, "Observer"))
	f.Add(docCode(m.ClientsDoc))
	f.Type().Id("Clients").Struct(fields...)
	f.Line()
	var sfields []jen.Code
	for _, d := range m.DBFields {
		sfields = append(sfields, jen.Id(d).Qual(runtimePkg, "DB"))
	}
	if m.Prefixed {
		sfields = append(sfields, jen.Id("prefix").String())
	}
	f.Add(docCode(m.ScriptsDoc))
	f.Type().Id("Scripts").Struct(sfields...)
	f.Line()
	if !m.Prefixed {
		return
	}
	f.Comment("Option configures NewScripts.")
	f.Type().Id("Option").Func().Params(jen.Op("*").Id("Scripts"))
	f.Line()
	f.Add(docCode(wrapped("WithPrefix binds the Scripts to deployment p: its wrappers take only keys built with p.")))
	f.Func().Id("WithPrefix").Params(jen.Id("p").Id("Prefix")).Id("Option").Block(
		jen.Return(jen.Func().Params(jen.Id("s").Op("*").Id("Scripts")).Block(jen.Id("s").Dot("prefix").Op("=").Id("p").Dot("s"))),
	)
	f.Line()
}

func emitNewScripts(f *jen.File, n newScripts) {
	checks := []jen.Code{jen.Id("s").Op(":=").Op("&").Id("Scripts").Values(), jen.Var().Err().Error()}
	if n.Prefixed {
		checks = append(checks,
			jen.For(jen.List(jen.Id("_"), jen.Id("o")).Op(":=").Range().Id("opts")).Block(jen.Id("o").Call(jen.Id("s"))),
			jen.If(jen.Id("s").Dot("prefix").Op("==").Lit("")).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(n.NoPrefix), jen.Qual(runtimePkg, "ErrInvalidPrefix")))),
		)
	}
	for _, d := range n.Binds {
		checks = append(checks, jen.If(
			jen.List(jen.Id("s").Dot(d.Field), jen.Err()).Op("=").Qual(n.BindPkg, "Bind").Call(jen.Id("c").Dot(d.Client), jen.Lit(d.Label), jen.Id(d.DB), jen.Id("c").Dot("Observer")),
			jen.Err().Op("!=").Nil(),
		).Block(jen.Return(jen.Nil(), jen.Err())))
	}
	checks = append(checks, jen.Return(jen.Id("s"), jen.Nil()))
	params := []jen.Code{jen.Id("c").Id("Clients")}
	if n.Prefixed {
		params = append(params, jen.Id("opts").Op("...").Id("Option"))
	}
	f.Add(docCode(n.Doc))
	f.Func().Id("NewScripts").Params(params...).Params(jen.Op("*").Id("Scripts"), jen.Error()).Block(checks...)
	f.Line()
}
