package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitRepo makes a git repository in a temporary directory holding a copy of
// HAN's spec and Lua, committed once.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	dir := workspace(t)
	gitIn(t, dir, "init", "-q", "-b", "main")
	commitAll(t, dir, "HAN's spec")
	return dir
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=test@example.invalid", "-c", "user.name=test", "-c", "commit.gpgsign=false"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func commitAll(t *testing.T, dir, msg string) {
	t.Helper()
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", msg)
}

func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

func compare(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	full := append(append([]string{}, args...), "--spec", filepath.Join(dir, "keyspec.yaml"), "--lua", filepath.Join(dir, "lua"))
	code := run(full, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

var findingLine = regexp.MustCompile(`^keyspec\.yaml:\d+: [a-z-]+: .+ \[(data|rolling-deploy|acl)\]$`)

func TestBreakingAgainstGit(t *testing.T) {
	dir := gitRepo(t)
	if code, out, errOut := compare(t, dir, "breaking", "--against", "HEAD"); code != exitOK || out != "" {
		t.Fatalf("unchanged: exit %d\n%s%s", code, out, errOut)
	}
	spec := filepath.Join(dir, "keyspec.yaml")
	editFile(t, spec, "ttl: {rule: fixed, value: 30s, max: 30s}", "ttl: {rule: fixed, value: 10s, max: 30s}")
	code, out, errOut := compare(t, dir, "breaking", "--against", "HEAD")
	if code != exitProblem {
		t.Fatalf("a shorter TTL: exit %d, want 1\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || !findingLine.MatchString(lines[0]) || !strings.Contains(lines[0], `ttl-shortened: key "api_jwks_negative" TTL shorter (fixed, value 30s -> 10s)`) {
		t.Fatalf("findings:\n%s", out)
	}
	if !strings.Contains(errOut, "against HEAD: 1 breaking, 0 warnings, 0 accepted") {
		t.Errorf("summary: %s", errOut)
	}
	// JSON carries the same finding with its file and line.
	code, out, _ = compare(t, dir, "breaking", "--against", "HEAD", "--format", "json")
	var fs []map[string]any
	if err := json.Unmarshal([]byte(out), &fs); err != nil || code != exitProblem || len(fs) != 1 || fs[0]["rule"] != "ttl-shortened" || fs[0]["file"] != "keyspec.yaml" || fs[0]["line"].(float64) < 1 || fs[0]["category"] != "data" {
		t.Fatalf("json: exit %d %v\n%s", code, err, out)
	}
	if _, dup := fs[0]["File"]; dup || strings.Contains(out, `\u003e`) {
		t.Errorf("json has its place twice or escaped text:\n%s", out)
	}
	// diff sees no script or grant change in a TTL edit; --format json parses.
	if code, out, errOut := compare(t, dir, "diff", "--against", "HEAD"); code != exitOK || !strings.Contains(out, "## luagen diff against `HEAD`\n\nNo script, key access or ACL grant changes.") {
		t.Fatalf("diff: exit %d\n%s%s", code, out, errOut)
	}
	var report map[string]any
	if code, out, _ := compare(t, dir, "diff", "--against", "HEAD", "--format", "json"); code != exitOK || json.Unmarshal([]byte(out), &report) != nil || report["against"] != "HEAD" {
		t.Fatalf("diff json: exit %d\n%s", code, out)
	}
	// Accepted with a reason, it no longer fails.
	editFile(t, spec, "version: 1\n", "version: 1\nbreaking:\n  ignore:\n    - {rule: ttl-shortened, entry: keys.api_jwks_negative, reason: \"the marker only delays a JWKS refetch\"}\n")
	if code, out, errOut := compare(t, dir, "breaking", "--against", "HEAD"); code != exitOK || out != "" || !strings.Contains(errOut, "1 accepted by breaking: ignore") {
		t.Fatalf("ignored: exit %d\n%s%s", code, out, errOut)
	}
	// The older revision's own ignore list does not apply: HEAD's spec is the new one now.
	commitAll(t, dir, "shorter marker")
	if code, out, errOut := compare(t, dir, "breaking", "--against", "HEAD~1"); code != exitOK {
		t.Fatalf("HEAD~1 with the ignore entry: exit %d\n%s%s", code, out, errOut)
	}
	// A directory holding the older copy works as a revision too.
	old := t.TempDir()
	copyTree(t, "../../../lua", filepath.Join(old, "lua"))
	src, _ := os.ReadFile("../../../keyspec.yaml")
	os.WriteFile(filepath.Join(old, "keyspec.yaml"), src, 0o644)
	if code, out, _ := compare(t, dir, "breaking", "--against", old); code != exitOK || out != "" {
		t.Fatalf("against a directory: exit %d\n%s", code, out)
	}
}

// What cannot be compared says where and why: a usage error (exit 2) for a
// revision that cannot be read, exit 1 and file:line for an older spec that
// does not parse.
func TestBreakingBadInput(t *testing.T) {
	dir := gitRepo(t)
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no against", []string{"breaking"}, exitUsage, "--against is required"},
		{"unknown ref", []string{"breaking", "--against", "no-such-branch"}, exitUsage, "--against no-such-branch: unknown revision in "},
		{"option as ref", []string{"breaking", "--against", "--output=x"}, exitUsage, "unknown revision"},
		{"bad format", []string{"breaking", "--against", "HEAD", "--format", "xml"}, exitUsage, `--format "xml"`},
		{"diff no against", []string{"diff"}, exitUsage, "--against is required"},
		{"diff unknown ref", []string{"diff", "--against", "v9"}, exitUsage, "--against v9: unknown revision"},
	} {
		code, out, errOut := compare(t, dir, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%s: exit %d, want %d; stderr %q (want %q)\n%s", c.name, code, c.code, errOut, c.msg, out)
		}
	}

	// Outside a repository.
	plain := workspace(t)
	if code, _, errOut := compare(t, plain, "breaking", "--against", "HEAD~1"); code != exitUsage || !strings.Contains(errOut, "not in a git repository") {
		t.Errorf("not a repository: exit %d\n%s", code, errOut)
	}

	// A shallow clone lacks HEAD~1 and says so.
	shallow := filepath.Join(t.TempDir(), "shallow")
	if out, err := exec.Command("git", "clone", "-q", "--depth", "1", "file://"+dir, shallow).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if code, _, errOut := compare(t, shallow, "breaking", "--against", "HEAD~1"); code != exitUsage || !strings.Contains(errOut, "shallow clone") || !strings.Contains(errOut, "git fetch --deepen") {
		t.Errorf("shallow: exit %d\n%s", code, errOut)
	}

	// An older spec this luagen cannot read: its errors name REV:file:line.
	editFile(t, filepath.Join(dir, "keyspec.yaml"), "    kind: marker\n", "    kind: marker\n    colour: red\n")
	commitAll(t, dir, "a field that does not exist")
	gitIn(t, dir, "checkout", "-q", "HEAD~1", "--", "keyspec.yaml")
	code, _, errOut := compare(t, dir, "breaking", "--against", "HEAD")
	if code != exitProblem || !regexp.MustCompile(`(?m)^HEAD:keyspec\.yaml:\d+: field colour not found in a key`).MatchString(errOut) || !strings.Contains(errOut, "the older revision HEAD does not parse") {
		t.Errorf("unreadable old spec: exit %d\n%s", code, errOut)
	}

	// No git at all.
	t.Setenv("PATH", t.TempDir())
	if code, _, errOut := compare(t, dir, "breaking", "--against", "HEAD"); code != exitUsage || !strings.Contains(errOut, "git is not installed") {
		t.Errorf("no git: exit %d\n%s", code, errOut)
	}
	// A directory needs no git.
	if code, out, errOut := compare(t, dir, "breaking", "--against", dir); code != exitOK {
		t.Errorf("a directory without git: exit %d\n%s%s", code, out, errOut)
	}
}
