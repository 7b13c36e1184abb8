package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// luagen import drafts lua/<instance>/ and keyspec.yaml from Go and Lua
// sources, each script's source unchanged; luagen generate then lists every
// decision still open at its line; a second import writes nothing over them.
func TestImport(t *testing.T) {
	src, err := filepath.Abs("../../../gen/importer/testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, stdout, stderr := luagen(t, "", "import", "--from", src, "--instance", "jobs", "--dir", dir)
	if code != 0 || !strings.Contains(stdout, "7 script(s) under "+filepath.Join(dir, "lua", "jobs")) || !strings.Contains(stdout, "decision(s) still open, each marked TODO(luagen import)") {
		t.Fatalf("import: %d\n%s%s", code, stdout, stderr)
	}
	got, err := os.ReadFile(filepath.Join(dir, "lua", "jobs", "lock_extend.lua"))
	want, _ := os.ReadFile(filepath.Join(src, "lock_extend.lua"))
	if err != nil || string(got) != string(want) {
		t.Fatalf("lock_extend.lua changed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lua", "jobs", "enqueue.lua")); err != nil {
		t.Fatalf("the Go script: %v", err)
	}
	code, _, stderr = luagen(t, dir, "generate")
	if code != 1 || !strings.Contains(stderr, "keyspec.yaml:23: keys.lock.pattern: still open (luagen import drafted it): the name's pattern") {
		t.Fatalf("generate of the draft: %d\n%s", code, stderr)
	}
	if n := strings.Count(stderr, "still open"); n < 10 {
		t.Fatalf("%d open decisions listed:\n%s", n, stderr)
	}
	spec, _ := os.ReadFile(filepath.Join(dir, "keyspec.yaml"))
	code, _, stderr = luagen(t, "", "import", "--from", src, "--instance", "jobs", "--dir", dir)
	if code != 1 || !strings.Contains(stderr, "already has keyspec.yaml, lua/jobs/counter.lua") || !strings.Contains(stderr, "nothing written") {
		t.Fatalf("a second import: %d\n%s", code, stderr)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "keyspec.yaml")); string(again) != string(spec) {
		t.Fatal("the second import changed keyspec.yaml")
	}
	for _, args := range [][]string{{"import"}, {"import", "--from", src}, {"import", "--instance", "jobs"}, {"import", "--from", src, "--instance", "jobs", "extra"}} {
		if code, _, _ := luagen(t, "", append(args, "--dir", t.TempDir())...); code != 2 {
			t.Errorf("luagen %v exited %d, want 2", args, code)
		}
	}
	if code, _, stderr := luagen(t, "", "import", "--from", filepath.Join(src, "nope"), "--instance", "jobs", "--dir", t.TempDir()); code != 1 || !strings.Contains(stderr, "no such file") {
		t.Errorf("a missing source: %d %s", code, stderr)
	}
	if code, _, stderr := luagen(t, "", "import", "--from", src, "--instance", "Jobs", "--dir", t.TempDir()); code != 1 || !strings.Contains(stderr, `instance "Jobs"`) {
		t.Errorf("a bad instance name: %d %s", code, stderr)
	}
}
