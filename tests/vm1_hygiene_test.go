package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// VM1's own code, not only the generated package (seed 000 §2: "MESSAGE_SAFETY_REDIS_URL
// is absent from VM1"; seed 004 §2, §9): no non-test Go file of VM1's services or of
// the VM1 example service imports VM2's generated package or services (whose
// DB0URLEnv is that variable), or holds a string literal or an identifier naming
// VM2's URL variable, key prefix, user or instance.
func TestVM1ServicesNameNothingOfVM2(t *testing.T) {
	forbiddenImports := []string{"generated/vm2", "services/vm2", "internal/safetytest"}
	forbiddenText := []string{"MESSAGE_SAFETY_REDIS_URL", "han:safety:", "message_safety"}
	forbiddenIdents := []string{"MessageSafety", "MESSAGE_SAFETY_REDIS_URL"}
	fset := token.NewFileSet()
	files := 0
	for _, root := range []string{"../services/vm1", "../examples/apiservice"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			files++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range forbiddenImports {
					if strings.Contains(p, bad) {
						t.Errorf("%s imports %s (VM2's)", fset.Position(imp.Pos()), p)
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BasicLit:
					if n.Kind == token.STRING {
						for _, bad := range forbiddenText {
							if strings.Contains(n.Value, bad) {
								t.Errorf("%s: a literal names VM2's %s", fset.Position(n.Pos()), bad)
							}
						}
					}
				case *ast.Ident:
					for _, bad := range forbiddenIdents {
						if strings.Contains(n.Name, bad) {
							t.Errorf("%s: identifier %s names VM2", fset.Position(n.Pos()), n.Name)
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 20 {
		t.Fatalf("scanned %d files of VM1's code: the roots moved?", files)
	}
}
