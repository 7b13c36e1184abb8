package gen_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// toolPackages are luagen itself: what must build and test without its first
// users (HAN's keyspec.yaml, lua/, generated/, services/, and the examples).
var toolPackages = []string{"./gen/...", "./cmd/luagen", "./runtime/...", "./luatest"}

// usersOfTheTool are the module's packages that use the tool rather than
// belong to it.
var usersOfTheTool = []string{"generated", "services", "examples", "tests", "cmd/elang"}

// No package of the tool, nor any of its tests, depends on a user of the tool:
// go list's -deps -test closure of the tool holds none of them.
func TestToolDoesNotImportItsUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of the whole tool: not under -short")
	}
	cmd := exec.Command("go", append([]string{"list", "-deps", "-test", "-f", "{{.ImportPath}}"}, toolPackages...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/hanchat/luagen/"
	sc := bufio.NewScanner(bytes.NewReader(out))
	n := 0
	for sc.Scan() {
		n++
		p := strings.TrimPrefix(sc.Text(), module)
		for _, u := range usersOfTheTool {
			if p == u || strings.HasPrefix(p, u+"/") {
				t.Errorf("the tool depends on %s%s (go list -deps -test %s)", module, p, strings.Join(toolPackages, " "))
			}
		}
	}
	if n < 50 {
		t.Fatalf("go list listed only %d packages", n)
	}
}

// userPath finds a path literal that climbs out of a package to the users'
// files at the repository's top: "../../keyspec.yaml", "../lua",
// filepath.Join("..", "..", "generated"), "../../sizing/vm1.yaml".
var userPath = regexp.MustCompile(`"(\.\./)+(keyspec\.yaml|lua|generated|services|examples|sizing|monitoring|tests)(/[^"]*)?"|"\.\.",\s*("\.\.",\s*)*"(keyspec\.yaml|lua|generated|services|examples|sizing|monitoring|tests)"`)

// No test of the tool reads its users' files: each runs on fixtures of its
// own (HAN's and Elang's checks live in tests/han).
func TestToolTestsReadOnlyTheirOwnFixtures(t *testing.T) {
	checked := 0
	for _, dir := range []string{"../gen", "../cmd/luagen", "../runtime", "../luatest"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || filepath.Base(path) == "standalone_test.go" {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			checked++
			for i, line := range strings.Split(string(src), "\n") {
				if m := userPath.FindString(line); m != "" {
					t.Errorf("%s:%d: %s reads a file of the tool's users; give the test a fixture under its testdata/, or move it to tests/han", path, i+1, m)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked", checked)
	}
	// The check itself finds what it is for.
	for _, bad := range []string{`keyspec.Load("../../keyspec.yaml")`, `os.DirFS("../lua")`, `filepath.Join("..", "..", "generated", "vm1")`, `"../../sizing/vm1.yaml"`} {
		if !userPath.MatchString(bad) {
			t.Errorf("userPath misses %s", bad)
		}
	}
	for _, good := range []string{`"../testdata/small/keyspec.yaml"`, `"testdata/lua"`, `"../../docs/keyspec.md"`, `"lua"`} {
		if userPath.MatchString(good) {
			t.Errorf("userPath refuses %s", good)
		}
	}
}
