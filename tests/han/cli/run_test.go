package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateThenCheck(t *testing.T) {
	dir := workspace(t)
	if code, _, stderr := luagen(t, dir, "check"); code != 1 || !strings.Contains(stderr, "vm1/scripts.go: missing") {
		t.Fatalf("check before generate: %d\n%s", code, stderr)
	}
	if code, stdout, stderr := luagen(t, dir, "generate"); code != 0 || !strings.Contains(stdout, "12 files") {
		t.Fatalf("generate: %d %s %s", code, stdout, stderr)
	}
	if code, _, stderr := luagen(t, dir, "check"); code != 0 {
		t.Fatalf("check after generate: %d\n%s", code, stderr)
	}
}

func TestCheckFailsAfterALuaEdit(t *testing.T) {
	dir := workspace(t)
	luagen(t, dir, "generate")
	f := filepath.Join(dir, "lua", "vm2", "cache_get.lua")
	src, _ := os.ReadFile(f)
	os.WriteFile(f, append(src, []byte("-- a reviewer's comment\n")...), 0o644)
	code, _, stderr := luagen(t, dir, "check")
	if code != 1 {
		t.Fatalf("check after a Lua edit exited %d", code)
	}
	for _, want := range []string{"vm2/lua.go: changed", "+-- a reviewer's comment", "CacheGetSHA1", "run luagen generate"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check output lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "vm1/") {
		t.Errorf("a vm2 Lua edit reported vm1 drift:\n%s", stderr)
	}
}

func TestCheckFailsAfterASpecEdit(t *testing.T) {
	dir := workspace(t)
	luagen(t, dir, "generate")
	f := filepath.Join(dir, "keyspec.yaml")
	src, _ := os.ReadFile(f)
	os.WriteFile(f, bytes.Replace(src, []byte("ttl: {rule: fixed, value: 5m, max: 5m}"), []byte("ttl: {rule: fixed, value: 6m, max: 6m}"), 1), 0o644)
	code, _, stderr := luagen(t, dir, "check")
	if code != 1 || !strings.Contains(stderr, "vm1/keys.go: changed") || !strings.Contains(stderr, "6 * time.Minute") {
		t.Fatalf("check after a spec edit: %d\n%s", code, stderr)
	}
}

func TestCheckFailsAfterACommentOnlySpecEdit(t *testing.T) {
	dir := workspace(t)
	luagen(t, dir, "generate")
	f := filepath.Join(dir, "keyspec.yaml")
	src, _ := os.ReadFile(f)
	os.WriteFile(f, append(src, []byte("# a reviewer's note\n")...), 0o644)
	code, _, stderr := luagen(t, dir, "check")
	if code != 1 || !strings.Contains(stderr, "vm1/keys.go: changed") || !strings.Contains(stderr, "SpecSHA256") {
		t.Fatalf("check after a comment-only spec edit: %d\n%s", code, stderr)
	}
}

func TestInvalidSpecNamesTheLine(t *testing.T) {
	dir := workspace(t)
	f := filepath.Join(dir, "keyspec.yaml")
	src, _ := os.ReadFile(f)
	os.WriteFile(f, bytes.Replace(src, []byte("{name: owner, type: token}"), []byte("{name: owner, type: tokn}"), 1), 0o644)
	code, _, stderr := luagen(t, dir, "generate")
	if code != 1 || !strings.Contains(stderr, `keyspec.yaml:`) || !strings.Contains(stderr, `ARGV type "tokn" does not exist`) {
		t.Fatalf("generate with a bad ARGV type: %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "generated")); !os.IsNotExist(err) {
		t.Fatal("a failed generate wrote files")
	}
}

func TestInstanceFlag(t *testing.T) {
	dir := workspace(t)
	if code, _, stderr := luagen(t, dir, "generate", "--instance", "vm2"); code != 0 {
		t.Fatalf("%d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "generated", "vm1")); !os.IsNotExist(err) {
		t.Fatal("--instance vm2 wrote vm1")
	}
	if code, _, _ := luagen(t, dir, "check", "--instance", "vm2"); code != 0 {
		t.Fatal("check --instance vm2 after generate --instance vm2")
	}
	if code, _, stderr := luagen(t, dir, "generate", "--instance", "vm3"); code != 1 || !strings.Contains(stderr, `instance "vm3" is not declared`) {
		t.Fatalf("unknown instance: %d %s", code, stderr)
	}
}

func TestLint(t *testing.T) {
	dir := workspace(t)
	if code, stdout, _ := luagen(t, dir, "lint"); code != 0 || stdout != "" {
		t.Fatalf("lint of the HAN spec: %d\n%s", code, stdout)
	}
	os.WriteFile(filepath.Join(dir, "lua", "vm1", "lock_release.lua"), []byte("local cmd = ARGV[1]\nif redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call(cmd, KEYS[1])\nend\nreturn 0\n"), 0o644)
	code, stdout, _ := luagen(t, dir, "lint")
	if code != 1 || !strings.Contains(stdout, "lua/vm1/lock_release.lua:3: dynamic-command: redis.call with a command that is not a string literal") {
		t.Fatalf("lint with a dynamic command: %d\n%s", code, stdout)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"generate", "--nope"}, {"check", "extra"}} {
		if code, _, _ := luagen(t, "", args...); code != 2 {
			t.Errorf("luagen %v exited %d, want 2", args, code)
		}
	}
	if code, stdout, _ := luagen(t, "", "help"); code != 0 || !strings.Contains(stdout, "generate") {
		t.Errorf("help: %d %s", code, stdout)
	}
	if code, _, _ := luagen(t, "", "generate", "-h"); code != 0 {
		t.Errorf("generate -h exited %d", code)
	}
}

// The repository's own generated/ is current: what CI checks too.
func TestRepositoryIsCurrent(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua", "--out", "../../../generated"}, &stdout, &stderr); code != 0 {
		t.Fatalf("generated/ drifted from keyspec.yaml and lua/ (run make generate):\n%s", stderr.String())
	}
}
