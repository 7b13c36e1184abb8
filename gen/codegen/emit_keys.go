// keys.go from its model: the package doc and constants, the databases, the
// Prefix type, enums, key and channel types and the Keys table.

package codegen

import (
	"github.com/dave/jennifer/jen"
)

func emitKeys(pkg string, m keysFile) *jen.File {
	f := newFile(pkg)
	for i, p := range m.PackageDoc {
		if i > 0 {
			f.PackageComment("")
		}
		for _, l := range p {
			f.PackageComment(l)
		}
	}
	f.Const().Defs(constDefs(m.Consts)...)
	f.Line()
	for _, d := range m.DBs {
		f.Add(docCode(d.Doc))
		f.Const().Defs(constDefs(d.Consts)...)
		f.Line()
	}
	if m.Prefix != nil {
		emitPrefix(f, m.Prefix)
	}
	for _, e := range m.Enums {
		emitEnum(f, e)
	}
	var infos []jen.Code
	for i, k := range m.Keys {
		emitNameType(f, k)
		infos = append(infos, keyInfoCode(m.Infos[i]))
	}
	f.Add(docCode(m.KeysDoc))
	f.Var().Id("Keys").Op("=").Index().Qual(runtimePkg, "KeyInfo").Values(infos...)
	f.Line()
	for _, c := range m.Channels {
		emitNameType(f, c)
	}
	return f
}

func keyInfoCode(fields []fieldValue) jen.Code {
	d := jen.Dict{}
	for _, fv := range fields {
		d[jen.Id(fv.Field)] = litCode(fv.Value)
	}
	return jen.Line().Values(d)
}

func emitEnum(f *jen.File, e enumDecl) {
	t := e.Type
	f.Add(docCode(e.Doc))
	f.Type().Id(t).String()
	f.Line()
	var list, cases []jen.Code
	for _, v := range e.Values {
		list = append(list, jen.Line().Id(v.Name))
		cases = append(cases, jen.Id(v.Name))
	}
	f.Add(docCode(e.ValuesComment))
	f.Const().Defs(constDefs(e.Values)...)
	f.Line()
	f.Add(docCode(e.ListDoc))
	f.Var().Id(e.List).Op("=").Index().Id(t).Values(append(list, jen.Line())...)
	f.Line()
	f.Add(docCode(e.ValidDoc))
	f.Func().Params(jen.Id("v").Id(t)).Id("Valid").Params().Bool().Block(
		jen.Switch(jen.Id("v")).Block(jen.Case(cases...).Block(jen.Return(jen.True()))),
		jen.Return(jen.False()),
	)
	f.Line()
	if h := e.Digests; h != nil {
		var dict []jen.Code
		for _, en := range h.Entries {
			dict = append(dict, jen.Line().Id(en.Const).Op(":").Lit(en.Digest))
		}
		f.Add(docCode(h.Doc))
		f.Var().Id(h.Var).Op("=").Map(jen.Id(t)).String().Values(append(dict, jen.Line())...)
		f.Line()
	}
	if s := e.Strings; s != nil {
		var vals []jen.Code
		for _, l := range s.Labels {
			vals = append(vals, jen.Lit(l))
		}
		f.Var().Id(s.Var).Op("=").Index().String().Values(vals...)
		f.Line()
	}
}

// emitNameType writes a key or channel type, its pattern and limits, and its builder.
func emitNameType(f *jen.File, nt nameType) {
	f.Add(docCode(nt.Doc))
	if nt.HoldsPrefix {
		f.Type().Id(nt.Type).Struct(jen.Id(nt.Field).String(), jen.Id("p").String())
	} else {
		f.Type().Id(nt.Type).Struct(jen.Id(nt.Field).String())
	}
	f.Line()
	f.Add(docCode(nt.StringDoc))
	f.Func().Params(jen.Id(nt.Recv).Id(nt.Type)).Id("String").Params().String().Block(jen.Return(jen.Id(nt.Recv).Dot(nt.Field)))
	f.Line()
	if g := nt.PatternFunc; g != nil {
		f.Add(docCode(g.Doc))
		f.Func().Id(g.Name).Params(jen.Id("p").Id("Prefix")).String().Block(jen.Return(jen.Id("p").Dot("s").Op("+").Lit(g.Glob)))
		f.Line()
	}
	if len(nt.Consts) > 0 {
		f.Const().Defs(constDefs(nt.Consts)...)
		f.Line()
	}
	emitBuilder(f, nt.Builder)
}

// emitPrefix writes Prefix, the deployment prefix of an instance that has one.
func emitPrefix(f *jen.File, p *prefixDecl) {
	f.Add(docCode(p.Doc))
	f.Type().Id("Prefix").Struct(jen.Id("s").String())
	f.Line()
	f.Comment("String is the prefix itself.")
	f.Func().Params(jen.Id("p").Id("Prefix")).Id("String").Params().String().Block(jen.Return(jen.Id("p").Dot("s")))
	f.Line()
	f.Const().Defs(constDefs(p.Consts)...)
	f.Line()
	reserved := make([]jen.Code, len(p.Reserved))
	for i, r := range p.Reserved {
		reserved[i] = jen.Lit(r)
	}
	f.Add(docCode(p.ReservedDoc))
	f.Var().Id("prefixReserved").Op("=").Index().String().Values(reserved...)
	f.Line()
	rsv := jen.Id("prefixReserved").Op("...")
	wrap := func(call jen.Code) []jen.Code {
		return []jen.Code{
			jen.List(jen.Id("s"), jen.Err()).Op(":=").Add(call),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Id("Prefix").Values(), jen.Err())),
			jen.Return(jen.Id("Prefix").Values(jen.Id("s")), jen.Nil()),
		}
	}
	f.Comment("NewPrefix checks an explicit deployment prefix (runtime.CheckPrefix); it is never altered.")
	f.Func().Id("NewPrefix").Params(jen.Id("s").String()).Params(jen.Id("Prefix"), jen.Error()).Block(
		jen.If(jen.Err().Op(":=").Qual(runtimePkg, "CheckPrefix").Call(jen.Id("s"), jen.Id("PrefixMaxLen"), rsv), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Id("Prefix").Values(), jen.Err())),
		jen.Return(jen.Id("Prefix").Values(jen.Id("s")), jen.Nil()),
	)
	f.Line()
	f.Add(docCode(wrapped("PrefixFromURL derives the default deployment prefix from the application's URL (runtime.PrefixFromURL: host, port and path, each a segment). Applications sharing a URL must use NewPrefix with a prefix of their own.")))
	f.Func().Id("PrefixFromURL").Params(jen.Id("appURL").String()).Params(jen.Id("Prefix"), jen.Error()).Block(wrap(jen.Qual(runtimePkg, "PrefixFromURL").Call(jen.Id("appURL"), jen.Id("PrefixMaxLen"), rsv))...)
	f.Line()
	if e := p.FromEnv; e != nil {
		explicit, appURL := jen.Lit(""), jen.Lit("")
		if e.Env {
			explicit = jen.Qual("os", "Getenv").Call(jen.Id("PrefixEnv"))
		}
		if e.DefaultFrom {
			appURL = jen.Qual("os", "Getenv").Call(jen.Id("PrefixDefaultFrom"))
		}
		f.Add(docCode(e.Doc))
		f.Func().Id("PrefixFromEnv").Params().Params(jen.Id("Prefix"), jen.Error()).Block(wrap(jen.Qual(runtimePkg, "ResolvePrefix").Call(explicit, appURL, jen.Id("PrefixMaxLen"), rsv))...)
		f.Line()
	}
	f.Add(docCode(wrapped("Test is the prefix tests use instead of p: \"test:\" in front of it (runtime.TestPrefix), outside every deployment's ACL patterns.")))
	f.Func().Params(jen.Id("p").Id("Prefix")).Id("Test").Params().Params(jen.Id("Prefix"), jen.Error()).Block(wrap(jen.Qual(runtimePkg, "TestPrefix").Call(jen.Id("p").Dot("s"), jen.Id("PrefixMaxLen")))...)
	f.Line()
	f.Comment("globs prefixes each relative glob with p.")
	f.Func().Params(jen.Id("p").Id("Prefix")).Id("globs").Params(jen.Id("rel").Op("...").String()).Index().String().Block(
		jen.Id("out").Op(":=").Make(jen.Index().String(), jen.Len(jen.Id("rel"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("g")).Op(":=").Range().Id("rel")).Block(jen.Id("out").Index(jen.Id("i")).Op("=").Id("p").Dot("s").Op("+").Id("g")),
		jen.Return(jen.Id("out")),
	)
	f.Line()
}
