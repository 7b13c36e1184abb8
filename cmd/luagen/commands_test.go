package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is the tool's own small spec: instances a (three scripts) and b.
const fixture = "../../gen/testdata/small"

// workspace copies the fixture's keyspec.yaml and lua/ into a fresh directory.
func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(fixture)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// addServerSection gives instance a of the fixture's spec at path the server
// section (persistence, eviction) luagen config requires.
func addServerSection(t *testing.T, path string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(src, []byte("    topology: standalone\n"), []byte("    topology: standalone\n    server:\n      persistence: {mode: none, source: a cache}\n      eviction: {policy: allkeys-lru, reason: every key is a cache entry}\n"), 1)
	if bytes.Equal(edited, src) {
		t.Fatal("the fixture's spec no longer has the topology line to add a server section after")
	}
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
}

// luagen runs the command line in this process; with dir it adds --spec and
// --lua (and --out, but for lint) of that workspace.
func luagen(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	full := append([]string{}, args...)
	if dir != "" {
		full = append(full, "--spec", filepath.Join(dir, "keyspec.yaml"), "--lua", filepath.Join(dir, "lua"))
		if args[0] != "lint" {
			full = append(full, "--out", filepath.Join(dir, "generated"))
		}
	}
	code := run(full, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// Each command on the fixture: what it prints and its exit status (0 done,
// 1 a problem found, 2 a wrong command line). HAN's spec is run through the
// same commands in tests/han/cli.
func TestCommandsOnTheFixture(t *testing.T) {
	dir := workspace(t)
	spec, lua := filepath.Join(dir, "keyspec.yaml"), filepath.Join(dir, "lua")
	addServerSection(t, spec)
	if code, _, stderr := luagen(t, dir, "check"); code != exitProblem || !strings.Contains(stderr, "a/scripts.go: missing") {
		t.Fatalf("check before generate: %d\n%s", code, stderr)
	}
	if code, stdout, stderr := luagen(t, dir, "generate"); code != exitOK || !strings.Contains(stdout, "files") {
		t.Fatalf("generate: %d %s %s", code, stdout, stderr)
	}
	if code, _, stderr := luagen(t, dir, "check"); code != exitOK {
		t.Fatalf("check after generate: %d\n%s", code, stderr)
	}
	put := filepath.Join(lua, "a", "put.lua")
	src, err := os.ReadFile(put)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(put, append(src, "-- edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := luagen(t, dir, "check"); code != exitProblem || !strings.Contains(stderr, "a/") {
		t.Fatalf("check after a Lua edit: %d\n%s", code, stderr)
	}
	if err := os.WriteFile(put, src, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string // in stdout (code 0) or stderr
	}{
		{[]string{"acl", "--spec", spec, "--lua", lua, "--instance", "a"}, exitOK, "user u reset on"},
		{[]string{"acl", "--spec", spec, "--lua", lua, "--instance", "zz"}, exitProblem, "zz"},
		{[]string{"config", "--spec", spec, "--instance", "a"}, exitOK, "protected-mode yes"},
		{[]string{"config", "--spec", spec, "--instance", "a", "--bind", "0.0.0.0"}, exitUsage, "bind"},
		{[]string{"dashboards", "--spec", spec, "--instance", "a"}, exitOK, `"uid": "luagen-a"`},
		{[]string{"alerts", "--spec", spec, "--instance", "a"}, exitOK, "luagen-a-redis"},
		{[]string{"breaking", "--spec", spec, "--lua", lua, "--against", dir}, exitOK, ""},
		{[]string{"diff", "--spec", spec, "--lua", lua, "--against", dir}, exitOK, ""},
		{[]string{"breaking", "--spec", spec, "--lua", lua}, exitUsage, "--against is required"},
		{[]string{"doc", "--spec", spec, "--lua", lua, "--out", filepath.Join(dir, "doc")}, exitOK, ""},
		{[]string{"cover", "--spec", spec, "--lua", lua, "--profile", filepath.Join(dir, "nowhere")}, exitUsage, ""},
		{[]string{"generate", "--spec", filepath.Join(dir, "nope.yaml"), "--lua", lua, "--out", filepath.Join(dir, "generated")}, exitProblem, "nope.yaml"},
		{[]string{"generate", "--no-such-flag"}, exitUsage, "no-such-flag"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{nil, exitUsage, "usage: luagen"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		out := stderr.String()
		if code == exitOK {
			out = stdout.String()
		}
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("luagen %s: exit %d, want %d with %q\nstdout: %s\nstderr: %s", strings.Join(c.args, " "), code, c.code, c.want, stdout.String(), stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "doc", "index.html")); err != nil {
		t.Errorf("doc wrote no index.html: %v", err)
	}
}

// luagen alerts --out --tests writes both files or neither: when one cannot
// be written (its directory is missing) the other is left as it was, and no
// temporary file stays behind; when both can, both are written.
func TestAlertsWritesBothFilesOrNeither(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(fixture, "keyspec.yaml")
	rules, tests := filepath.Join(dir, "r.yml"), filepath.Join(dir, "t.yml")
	for _, f := range []string{rules, tests} {
		if err := os.WriteFile(f, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"--out", rules, "--tests", filepath.Join(dir, "missing", "t.yml")},
		{"--out", filepath.Join(dir, "missing", "r.yml"), "--tests", tests},
	} {
		code, _, stderr := luagen(t, "", append([]string{"alerts", "--spec", spec, "--instance", "a"}, args...)...)
		if code != exitProblem || !strings.Contains(stderr, filepath.Join(dir, "missing")+string(filepath.Separator)) {
			t.Errorf("%v: exit %d, stderr %s", args, code, stderr)
		}
		for _, f := range []string{rules, tests} {
			if b, _ := os.ReadFile(f); string(b) != "before\n" {
				t.Errorf("%v: %s was written", args, f)
			}
		}
	}
	if code, _, stderr := luagen(t, "", "alerts", "--spec", spec, "--instance", "a", "--out", rules, "--tests", tests); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, _ := os.ReadFile(rules)
	tb, _ := os.ReadFile(tests)
	if !strings.Contains(string(r), "groups:") || !strings.Contains(string(tb), "rule_files:\n    - r.yml\n") {
		t.Errorf("rules:\n%.200s\ntests:\n%.200s", r, tb)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files in %s, want the two written", len(entries), dir)
	}
	if fi, err := os.Stat(rules); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("rules file mode: %v %v", fi.Mode(), err)
	}
}
