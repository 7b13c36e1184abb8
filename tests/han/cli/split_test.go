package cli

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanchat/luagen/internal/specedit"
)

// splitWorkspace is a workspace whose spec has HAN's DB1 on a server of its own.
func splitWorkspace(t *testing.T) string {
	t.Helper()
	dir := workspace(t)
	path := filepath.Join(dir, "keyspec.yaml")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	split, err := specedit.MoveDB(src, specedit.HANRealtime)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, split, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Moving DB1 to its own server is a spec edit: generate writes the same Go
// (declarations and bodies; only comments and the spec's hash differ), lint
// stays clean, and acl and config write one file per server.
func TestSplitIsASpecEdit(t *testing.T) {
	dir := splitWorkspace(t)
	if code, _, stderr := luagen(t, dir, "generate"); code != 0 {
		t.Fatalf("generate: %d\n%s", code, stderr)
	}
	for _, f := range []string{"acl.go", "keys.go", "lua.go", "scripts.go"} {
		got := withoutComments(t, filepath.Join(dir, "generated", "vm1", f))
		want := withoutComments(t, filepath.Join("..", "..", "..", "generated", "vm1", f))
		if got != want {
			t.Errorf("generated/vm1/%s of the split spec differs from the repository's beyond comments", f)
		}
	}
	scripts, _ := os.ReadFile(filepath.Join(dir, "generated", "vm1", "scripts.go"))
	keys, _ := os.ReadFile(filepath.Join(dir, "generated", "vm1", "keys.go"))
	prose := func(b []byte) string {
		return strings.Join(strings.Fields(strings.ReplaceAll(string(b), "//", "")), " ")
	}
	if !strings.Contains(prose(keys), "database 1 of vm1 on its server realtime") || !strings.Contains(prose(scripts), "preload on a client of each") {
		t.Error("the generated comments do not name the servers")
	}
	if code, stdout, _ := luagen(t, dir, "lint"); code != 0 {
		t.Fatalf("lint of the split spec: %d\n%s", code, stdout)
	}

	spec, lua := filepath.Join(dir, "keyspec.yaml"), filepath.Join(dir, "lua")
	code, rt, stderr := luagen(t, "", "acl", "--spec", spec, "--lua", lua, "--instance", "vm1", "--server", "realtime")
	if code != 0 || !strings.Contains(rt, "~han:rt:*") || strings.Contains(rt, "han:api:") || strings.Contains(stderr, "prefix") {
		t.Fatalf("acl --server realtime: %d\n%s\n%s", code, rt, stderr)
	}
	code, own, stderr := luagen(t, "", "acl", "--spec", spec, "--lua", lua, "--instance", "vm1")
	if code != 0 || !strings.Contains(own, "~han:api:*") || strings.Contains(own, "han:rt:") || !strings.Contains(stderr, "its other servers (--server NAME): realtime") {
		t.Fatalf("acl of vm1's own server: %d\n%s\n%s", code, own, stderr)
	}
	code, conf, stderr := luagen(t, "", "config", "--spec", spec, "--instance", "vm1", "--server", "realtime", "--port", "6390")
	if code != 0 || !strings.Contains(conf, "for server realtime of instance vm1") || !strings.Contains(conf, "appendonly no\n") ||
		!strings.Contains(conf, "maxmemory-policy volatile-lru\n") || !strings.Contains(conf, "db1 (db 1, REDIS_REALTIME_URL)") || !strings.Contains(conf, "--server realtime` writes this file") ||
		!strings.Contains(conf, "client-output-buffer-limit pubsub 4194304 1048576 10\n") {
		t.Fatalf("config --server realtime: %d\n%s\n%s", code, conf, stderr)
	}
	code, conf, _ = luagen(t, "", "config", "--spec", spec, "--instance", "vm1")
	// The realtime channels moved: vm1's own server keeps the limit of an instance without channels.
	if code != 0 || !strings.Contains(conf, "appendonly yes\n") || !strings.Contains(conf, "db0 (db 0, REDIS_URL), db2 (db 2, SAFETY_STUB_REDIS_URL)") ||
		!strings.Contains(conf, "client-output-buffer-limit pubsub 524288 131072 10\n") {
		t.Fatalf("config of vm1's own server: %d\n%s", code, conf)
	}
	for _, args := range [][]string{
		{"acl", "--spec", spec, "--lua", lua, "--instance", "vm1", "--server", "nosuch"},
		{"config", "--spec", spec, "--instance", "vm1", "--server", "nosuch"},
		{"config", "--spec", spec, "--instance", "vm2", "--server", "realtime"},
	} {
		if code, _, stderr := luagen(t, "", args...); code != 1 || !strings.Contains(stderr, "--server") {
			t.Errorf("%v: %d %s", args, code, stderr)
		}
	}
}

// withoutComments is a Go file printed without its comments, the spec hash
// constant blanked.
func withoutComments(t *testing.T, path string) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "SpecSHA256" {
			vs.Values = nil
		}
		return true
	})
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
