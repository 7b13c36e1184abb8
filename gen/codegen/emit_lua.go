// lua.go from its model.

package codegen

import "github.com/dave/jennifer/jen"

func emitLua(pkg string, m luaFile) *jen.File {
	f := newFile(pkg)
	for _, s := range m.Scripts {
		f.Add(docCode(s.SHA1.Doc))
		f.Const().Id(s.SHA1.Name).Op("=").Add(litCode(s.SHA1.Value))
		f.Line()
		f.Add(docCode(s.SourceDoc))
		source := jen.Lit(s.Text)
		if s.Raw {
			source = jen.Op("`" + s.Text + "`")
		}
		f.Const().Id(s.Source).Op("=").Add(source)
		f.Line()
	}
	return f
}
