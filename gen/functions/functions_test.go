package functions_test

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/functions"
	"github.com/hanchat/luagen/gen/keyspec"
)

func build(t *testing.T, lua fstest.MapFS) *functions.Library {
	t.Helper()
	src, err := os.ReadFile("../testdata/features/functions/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := keyspec.Parse("keyspec.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, lua, "lua")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := functions.Build(spec, spec.Instance("app"), srcs)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

func feature(t *testing.T) fstest.MapFS {
	t.Helper()
	fs := fstest.MapFS{}
	for _, name := range []string{"hits_incr", "hits_peek"} {
		b, err := os.ReadFile("../testdata/features/functions/lua/app/" + name + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		fs["app/"+name+".lua"] = &fstest.MapFile{Data: b}
	}
	return fs
}

// A library names each function after its script's SHA1, flags a read-only
// script no-writes and nothing else, and its version changes with any body
// and only then.
func TestBuild(t *testing.T) {
	lua := feature(t)
	lib := build(t, lua)
	if lib.Name != "app" || !strings.HasPrefix(lib.Source, "#!lua name=app\n") || len(lib.Version) != 64 {
		t.Fatalf("library %s version %q:\n%s", lib.Name, lib.Version, lib.Source)
	}
	if !strings.Contains(lib.Source, "function_name = '"+lib.Functions["hits_peek"]+"', flags = {'no-writes'}") ||
		!strings.Contains(lib.Source, "function_name = '"+lib.Functions["hits_incr"]+"', flags = {}") {
		t.Fatalf("flags:\n%s", lib.Source)
	}
	if strings.Contains(lib.Source, "#!lua flags") {
		t.Fatal("a script's shebang reached the library")
	}
	if again := build(t, lua); again.Version != lib.Version || again.Source != lib.Source {
		t.Fatal("two builds of the same scripts differ")
	}
	changed := fstest.MapFS{"app/hits_peek.lua": lua["app/hits_peek.lua"], "app/hits_incr.lua": &fstest.MapFile{
		Data: []byte(strings.Replace(string(lua["app/hits_incr.lua"].Data), "return n", "return n + 0", 1)),
	}}
	other := build(t, changed)
	if other.Version == lib.Version || other.Functions["hits_incr"] == lib.Functions["hits_incr"] || other.Functions["hits_peek"] != lib.Functions["hits_peek"] {
		t.Fatalf("after a change of hits_incr: version %s -> %s, functions %v -> %v", lib.Version[:8], other.Version[:8], lib.Functions, other.Functions)
	}
}
