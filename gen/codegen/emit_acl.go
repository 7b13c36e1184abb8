// acl.go from its model.

package codegen

import "github.com/dave/jennifer/jen"

func emitACL(pkg string, m aclFile) *jen.File {
	f := newFile(pkg)
	for _, u := range m.Users {
		f.Const().Defs(constDefs(u.Consts)...)
		f.Line()
		for _, g := range []globList{u.Keys, u.Channels} {
			var globs []jen.Code
			for _, p := range g.Globs {
				globs = append(globs, jen.Lit(p))
			}
			f.Add(docCode(g.Doc))
			if u.Prefixed {
				f.Func().Id(g.Name).Params(jen.Id("p").Id("Prefix")).Index().String().Block(jen.Return(jen.Id("p").Dot("globs").Call(globs...)))
			} else {
				f.Var().Id(g.Name).Op("=").Index().String().Values(globs...)
			}
			f.Line()
		}
	}
	return f
}
