package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// luagen init writes a spec, a script and a test into a fresh module; the spec
// generates, lints clean, and the test it wrote passes (go test, in that module,
// against luatest's in-memory Redis). A second init refuses to overwrite.
func TestInitGeneratesAndPassesItsTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test in a new module: slow for -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	gomod := "module example.com/initcheck\n\ngo 1.26\n\nrequire github.com/hanchat/luagen v0.0.0\n\nreplace github.com/hanchat/luagen => " + root + "\n"
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mod, "svc")
	code, stdout, stderr := luagen(t, "", "init", "--dir", dir)
	if code != 0 || !strings.Contains(stdout, "luagen_hits_test.go") {
		t.Fatalf("init: %d\n%s%s", code, stdout, stderr)
	}
	spec, lua := filepath.Join(dir, "keyspec.yaml"), filepath.Join(dir, "lua")
	if code, _, stderr := luagen(t, "", "generate", "--spec", spec, "--lua", lua, "--out", filepath.Join(dir, "generated")); code != 0 {
		t.Fatalf("generate: %d\n%s", code, stderr)
	}
	if code, stdout, _ := luagen(t, "", "lint", "--spec", spec, "--lua", lua); code != 0 {
		t.Fatalf("lint of the init spec: %d\n%s", code, stdout)
	}
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok  \texample.com/initcheck/svc") {
		t.Fatalf("go test of the init module: %v\n%s", err, out)
	}
	before, _ := os.ReadFile(spec)
	os.WriteFile(spec, append(before, []byte("# edited\n")...), 0o644)
	if code, _, stderr := luagen(t, "", "init", "--dir", dir); code != 1 || !strings.Contains(stderr, "already has") {
		t.Fatalf("a second init: %d %s", code, stderr)
	}
	if after, _ := os.ReadFile(spec); !strings.HasSuffix(string(after), "# edited\n") {
		t.Fatal("a second init overwrote the spec")
	}
	if code, _, _ := luagen(t, "", "init", "--dir", dir, "extra"); code != 2 {
		t.Fatalf("init with an extra argument exited %d, want 2", code)
	}
	if code, _, stderr := luagen(t, "", "init", "--dir", t.TempDir()); code != 1 || !strings.Contains(stderr, "no go.mod") {
		t.Fatalf("init outside a module: %d %s", code, stderr)
	}
}

// luagen init --durable writes a job queue whose keys never expire: it
// generates, lints clean, and its test (the keys still there a month later)
// passes.
func TestInitDurableGeneratesAndPassesItsTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test in a new module: slow for -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	gomod := "module example.com/initdurable\n\ngo 1.26\n\nrequire github.com/hanchat/luagen v0.0.0\n\nreplace github.com/hanchat/luagen => " + root + "\n"
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mod, "jobs")
	code, stdout, stderr := luagen(t, "", "init", "--durable", "--dir", dir)
	if code != 0 || !strings.Contains(stdout, "luagen_jobs_test.go") || !strings.Contains(stdout, "job_push.lua") {
		t.Fatalf("init --durable: %d\n%s%s", code, stdout, stderr)
	}
	spec, lua := filepath.Join(dir, "keyspec.yaml"), filepath.Join(dir, "lua")
	if code, _, stderr := luagen(t, "", "generate", "--spec", spec, "--lua", lua, "--out", filepath.Join(dir, "generated")); code != 0 {
		t.Fatalf("generate: %d\n%s", code, stderr)
	}
	if code, stdout, _ := luagen(t, "", "lint", "--spec", spec, "--lua", lua); code != 0 {
		t.Fatalf("lint of the durable spec: %d\n%s", code, stdout)
	}
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok  \texample.com/initdurable/jobs") {
		t.Fatalf("go test of the durable module: %v\n%s", err, out)
	}
	// The spec's own rule, not luagen's: a job queue without its bound fails lint.
	src, _ := os.ReadFile(spec)
	os.WriteFile(spec, []byte(strings.Replace(string(src), "    max_len: 10000\n", "", 1)), 0o644)
	if code, stdout, _ := luagen(t, "", "lint", "--spec", spec, "--lua", lua); code != 1 || !strings.Contains(stdout, "forbidden-unbounded") {
		t.Fatalf("lint of the queue without its bound: %d\n%s", code, stdout)
	}
}
