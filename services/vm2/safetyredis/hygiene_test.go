package safetyredis

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Message Safety lives on VM2 only: no package of services/vm2 (this one and
// its siblings) imports VM1's generated code or names a key or channel of VM1
// (seed 004 §1, §2: its ACL sees han:safety:* only).
func TestNamesNothingOfVM1(t *testing.T) {
	files, err := filepath.Glob("../*/*.go")
	if err != nil || len(files) < 7 {
		t.Fatalf("the sources of services/vm2: %d files, %v", len(files), err)
	}
	vm1Prefixes := []string{"han:api:", "han:rt:", "han:coord:", "han:settings:", "han:legacy:"}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.Contains(p, "generated/vm1") {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				for _, p := range vm1Prefixes {
					if strings.Contains(lit.Value, p) {
						t.Errorf("%s: a literal names VM1's %s", fset.Position(lit.Pos()), p)
					}
				}
			}
			return true
		})
	}
}
