package codegen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/gen/keyspec"
)

// A name collision is an error naming both sides, found while building the model.
func TestCollisions(t *testing.T) {
	for name, tc := range map[string]struct {
		spec  *keyspec.Spec
		inst  string
		wants []string
	}{
		"enum values": {specFrom(t, small, "color: {values: [red, green]}", "color: {values: [red, green, x.y, x_y]}"), "a",
			[]string{"codegen a: ColorXY is declared in keys.go and keys.go: two spec names map to one Go name; rename one"}},
		"across files": {specFrom(t, small, "  u:\n    instance: a", "  db0:\n    instance: a", "user: u}", "user: db0}"), "a",
			[]string{"codegen a: DB0User is declared in acl.go and keys.go: two spec names map to one Go name; rename one"}},
		"wrapper local": {specFrom(t, small, "{name: item, one_of: [t_item]}", "{name: in, one_of: [t_item]}", "{name: item, one_of: [t_item]}", "{name: in, one_of: [t_item]}"), "a",
			[]string{
				`codegen a: script peek: key in: its Go parameter "in" is a name the generated wrapper uses itself; rename the key`,
				`codegen a: script put: key in: its Go parameter "in" is a name the generated wrapper uses itself; rename the key`,
			}},
		"builder local": {specFrom(t, "../testdata/features/prefix/keyspec.yaml", `"cache:{name}"`, `"cache:{p}"`, "      name: {type: name, max_len: 64}", "      p: {type: name, max_len: 64}"), "app",
			[]string{`codegen app: NewCacheEntryKey of cache:{p}: the deployment prefix and {p} both become "p"; rename one`}},
		"placeholders": {specFrom(t, small, "{kid_hash}:{digest}\"", "{kid_hash}:{digest}:{route}\"", "      digest: {type: hex, len: 8}", "      digest: {type: hex, len: 8}\n      route: {type: name, max_len: 8}"), "a",
			[]string{`codegen a: NewTRateKey of t:rl:{who}:{route_hash}:{ip_hmac}:{kid_hash}:{digest}:{route}: {route_hash} and {route} both become "route"; rename one`}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := buildModel(tc.spec, tc.inst)
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tc.wants) {
				t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(tc.wants, "\n"))
			}
		})
	}
}

// The model lists every package-level name each file declares, in order: the
// collision check sees all of them. Checked against the code emitted for each
// test spec.
func TestDeclsAreWhatTheFilesDeclare(t *testing.T) {
	specs, err := filepath.Glob("../testdata/features/*/keyspec.yaml")
	if err != nil || len(specs) == 0 {
		t.Fatalf("features: %v %v", specs, err)
	}
	for _, path := range append(specs, small) {
		spec := specFrom(t, path)
		for _, in := range spec.Instances {
			t.Run(filepath.Base(filepath.Dir(path))+"/"+in.Name, func(t *testing.T) {
				b := newModelBuilder(spec, in, scriptsOf(spec, in))
				files, err := render(b.model())
				if err != nil {
					t.Fatal(err)
				}
				for name, src := range files {
					if diff := cmp.Diff(declaredIn(t, name, src), b.decls.files[name]); diff != "" {
						t.Errorf("%s (-emitted +model):\n%s", name, diff)
					}
				}
			})
		}
	}
}

// declaredIn lists the package-level names a Go file declares, "T.M" for methods.
func declaredIn(t *testing.T, name string, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				out = append(out, d.Name.Name)
				continue
			}
			recv := d.Recv.List[0].Type
			if st, ok := recv.(*ast.StarExpr); ok {
				recv = st.X
			}
			out = append(out, recv.(*ast.Ident).Name+"."+d.Name.Name)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					out = append(out, sp.Name.Name)
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						out = append(out, id.Name)
					}
				}
			}
		}
	}
	return out
}
