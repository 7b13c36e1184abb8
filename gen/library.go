package gen

import (
	"bytes"
	"fmt"

	"github.com/dave/jennifer/jen"
	"github.com/hanchat/luagen/gen/codegen"
	"github.com/hanchat/luagen/gen/functions"
	"github.com/hanchat/luagen/gen/keyspec"
)

// libraryFile is library.go of a functions-mode instance: its Redis Functions
// library as a runtime.Library.
func libraryFile(in *keyspec.Instance, lib *functions.Library) ([]byte, error) {
	f := jen.NewFile(in.Name)
	f.HeaderComment(codegen.Header)
	f.Comment(fmt.Sprintf("Library is %s's Redis Functions library (mode: functions): every script of the", in.Name))
	f.Comment("instance as a function, and a version function. The deploy step loads it on every")
	f.Comment(fmt.Sprintf("primary as %s_loader: runtime.LoadLibrary, or luagen load --instance %s. The", in.Name, in.Name))
	f.Comment("wrappers call its functions and never load code; runtime.VerifyLibrary checks it.")
	f.Var().Id("Library").Op("=").Qual("github.com/hanchat/luagen/runtime", "Library").Values(jen.Dict{
		jen.Id("Name"):            jen.Lit(lib.Name),
		jen.Id("Version"):         jen.Lit(lib.Version),
		jen.Id("VersionFunction"): jen.Lit(functions.VersionFunction(in)),
		jen.Id("Source"):          jen.Id("librarySource"),
	})
	f.Line()
	f.Comment("librarySource is the FUNCTION LOAD payload, built from lua/" + in.Name + ".")
	f.Const().Id("librarySource").Op("=").Lit(lib.Source)
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("codegen %s/library.go: %w", in.Name, err)
	}
	return buf.Bytes(), nil
}
