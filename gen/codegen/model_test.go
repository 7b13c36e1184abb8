package codegen

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
)

// fakeSHA1 stands for a script's SHA1: the model only names it.
const fakeSHA1 = "0123456789abcdef0123456789abcdef01234567"

// specFrom parses the spec at path after each old -> new edit, in order, each
// replacing the first occurrence left (each must apply).
func specFrom(t *testing.T, path string, edits ...string) *keyspec.Spec {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(text, edits[i]) {
			t.Fatalf("edit %q does not apply to %s", edits[i], path)
		}
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	spec, err := keyspec.Parse("keyspec.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func scriptsOf(spec *keyspec.Spec, in *keyspec.Instance) []Script {
	var out []Script
	for _, s := range spec.ScriptsOf(in) {
		out = append(out, Script{Spec: s, Source: "return 1", SHA1: fakeSHA1})
	}
	slices.SortFunc(out, func(a, b Script) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	return out
}

// buildModel builds the model of instance name of spec.
func buildModel(spec *keyspec.Spec, name string) (*pkgModel, error) {
	in := spec.Instance(name)
	return build(spec, in, scriptsOf(spec, in))
}

const small = "../testdata/small/keyspec.yaml"
