package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// offlineEnv is the environment of the go commands the new-user tests run:
// no network (GOPROXY=off: every module comes from the local module cache,
// which make deps filled), go.mod updated as needed, and no checksum database
// (a module a replace provides has no checksum, and the cache has the rest).
func offlineEnv() []string {
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local")
}

// goCmd runs a command line of the go tool (or any program) in dir, offline,
// and fails the test with its output when it fails.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = offlineEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		hint := ""
		if strings.Contains(string(out), "module lookup disabled by GOPROXY=off") {
			hint = "\n(the module cache lacks a module these offline steps need: make deps downloads them once)"
		}
		t.Fatalf("in %s: %s: %v\n%s%s", dir, strings.Join(args, " "), err, out, hint)
	}
	return string(out)
}

// installCommands are the commands docs/install.md gives for installing luagen
// from a checkout, with the checkout's path in place of /path/to/luagen.
func installCommands(t *testing.T, root string) [][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for _, want := range []string{
		"go mod edit -replace=github.com/hanchat/luagen=/path/to/luagen -require=github.com/hanchat/luagen@v0.0.0-00010101000000-000000000000 -tool=github.com/hanchat/luagen/cmd/luagen",
		"go mod tidy",
	} {
		if !strings.Contains(string(doc), "\n"+want+"\n") {
			t.Fatalf("docs/install.md no longer has the line %q: update this test with the documented install", want)
		}
		cmds = append(cmds, strings.Fields(strings.ReplaceAll(want, "/path/to/luagen", root)))
	}
	return cmds
}

// printedSteps are the commands luagen init printed after "next steps", one
// a line, indented by two spaces.
func printedSteps(t *testing.T, out string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(out, "next steps")
	if !ok {
		t.Fatalf("init printed no next steps:\n%s", out)
	}
	var steps []string
	for _, line := range strings.Split(rest, "\n")[1:] {
		if s, ok := strings.CutPrefix(line, "  "); ok && s != "" {
			steps = append(steps, s)
		}
	}
	return steps
}

// runSteps runs each printed step as printed, through sh, from dir; a cd
// step moves the later ones, as it would in the user's shell.
func runSteps(t *testing.T, dir string, steps []string) map[string]string {
	t.Helper()
	outs := map[string]string{}
	for _, s := range steps {
		if d, ok := strings.CutPrefix(s, "cd "); ok {
			dir = filepath.Join(dir, d)
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				t.Fatalf("step %q: no directory %s", s, dir)
			}
			continue
		}
		outs[s] = goCmd(t, dir, "sh", "-c", s)
	}
	return outs
}

// A new user's path, issue 25's done-when: a fresh module installs luagen by
// the documented commands for a checkout (the replace, the requirement and the
// tool directive, then go mod tidy, offline), runs go tool luagen version and init, and each
// step init prints succeeds as printed: go generate (generate.go's go tool
// luagen generate), go mod tidy offline, and go test of the test init wrote.
func TestNewModuleInstallsToolInitsAndTestsAsPrinted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds luagen and runs go test in a new module: slow for -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	goCmd(t, mod, "go", "mod", "init", "example.com/shop")
	for _, c := range installCommands(t, root) {
		goCmd(t, mod, c...)
	}
	gomod, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^tool github.com/hanchat/luagen/cmd/luagen$`).Match(gomod) ||
		!strings.Contains(string(gomod), "replace github.com/hanchat/luagen => "+root) {
		t.Fatalf("go.mod after the documented install:\n%s", gomod)
	}
	if out := goCmd(t, mod, "go", "tool", "luagen", "version"); !strings.HasPrefix(out, "luagen github.com/hanchat/luagen v0.0.0-00010101000000-000000000000\nreplaced by "+root) {
		t.Fatalf("go tool luagen version:\n%s", out)
	}
	out := goCmd(t, mod, "go", "tool", "luagen", "init", "--dir", "shop")
	for _, f := range []string{"keyspec.yaml", "keyspec.schema.json", "generate.go", "luagen_hits_test.go"} {
		if !strings.Contains(out, "wrote "+filepath.Join("shop", f)+"\n") {
			t.Errorf("init did not report writing %s:\n%s", f, out)
		}
	}
	steps := printedSteps(t, out)
	if want := []string{"cd shop", "go generate ./...", "go mod tidy", "go test ./..."}; strings.Join(steps, "\n") != strings.Join(want, "\n") {
		t.Fatalf("next steps %q, want %q (the tool directive is there: no go get)", steps, want)
	}
	outs := runSteps(t, mod, steps)
	if !strings.Contains(outs["go test ./..."], "ok  \texample.com/shop/shop") {
		t.Fatalf("go test:\n%s", outs["go test ./..."])
	}
	if _, err := os.Stat(filepath.Join(mod, "shop", "generated", "app", "scripts.go")); err != nil {
		t.Fatalf("go generate wrote no generated/app: %v", err)
	}
	spec, _ := os.ReadFile(filepath.Join(mod, "shop", "keyspec.yaml"))
	if !strings.HasPrefix(string(spec), "# yaml-language-server: $schema=keyspec.schema.json\n") {
		t.Fatalf("the spec's first line does not point at the schema beside it:\n%.200s", spec)
	}
	// The same go tool builds the same luagen: its schema is the one init wrote.
	schema, _ := os.ReadFile(filepath.Join(mod, "shop", "keyspec.schema.json"))
	if printed := goCmd(t, mod, "go", "tool", "luagen", "schema"); printed != string(schema) || len(schema) == 0 {
		t.Fatal("go tool luagen schema differs from the keyspec.schema.json init wrote")
	}
}

// A module with only the replace (no tool directive yet): init, run in the
// module's root, prints the requirement and the tool directive first (go get
// -tool would ask the module proxy, which has no luagen), and the steps
// succeed as printed;
// luagen generate, run before go mod tidy by a module that does not require
// the generated code's modules, says to run go mod tidy.
func TestInitPrintsToolInstallWhenGoModHasNone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds luagen and runs go test in a new module: slow for -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	goCmd(t, mod, "go", "mod", "init", "example.com/durable")
	goCmd(t, mod, "go", "mod", "edit", "-replace", "github.com/hanchat/luagen="+root)
	t.Chdir(mod)
	code, stdout, stderr := luagen(t, "", "init", "--durable")
	if code != 0 {
		t.Fatalf("init: %d\n%s%s", code, stdout, stderr)
	}
	steps := printedSteps(t, stdout)
	if want := []string{"go mod edit -require=github.com/hanchat/luagen@v0.0.0-00010101000000-000000000000 -tool=github.com/hanchat/luagen/cmd/luagen", "go mod tidy -e", "go generate ./...", "go mod tidy", "go test ./..."}; strings.Join(steps, "\n") != strings.Join(want, "\n") {
		t.Fatalf("next steps %q, want %q", steps, want)
	}
	// Before any step: the module requires nothing the generated code imports.
	code, _, stderr = luagen(t, "", "generate")
	if code != 0 || !strings.Contains(stderr, "go.mod does not require github.com/hanchat/luagen, github.com/redis/go-redis/v9, which the generated code imports: run go mod tidy") {
		t.Fatalf("generate in a module without the requirements: %d\n%s", code, stderr)
	}
	outs := runSteps(t, mod, steps)
	if !strings.Contains(outs["go test ./..."], "ok  \texample.com/durable") {
		t.Fatalf("go test:\n%s", outs["go test ./..."])
	}
	// After go mod tidy the requirements are there: generate says nothing more.
	code, _, stderr = luagen(t, "", "generate")
	if code != 0 || stderr != "" {
		t.Fatalf("generate after go mod tidy: %d %q", code, stderr)
	}
	// A second init finds generate.go's go:generate line and the rest: it refuses.
	if code, _, stderr := luagen(t, "", "init", "--durable"); code != 1 || !strings.Contains(stderr, "already has") {
		t.Fatalf("second init: %d %s", code, stderr)
	}
}
