package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoc(t *testing.T) {
	dir := workspace(t)
	out := filepath.Join(t.TempDir(), "site")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"doc"}, exitUsage, "--out is required"},
		{[]string{"doc", "--out", out, "--instance", "vm9"}, exitUsage, "--instance vm9: " + filepath.Join(dir, "keyspec.yaml") + " declares no such instance"},
	} {
		if code, _, errOut := compare(t, dir, c.args...); code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, want %d: %q", c.args, code, c.code, errOut)
		}
	}
	code, stdout, errOut := compare(t, dir, "doc", "--out", out, "--instance", "vm2")
	if code != exitOK || !strings.Contains(stdout, filepath.Join(out, "index.html")) {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil || !strings.Contains(string(page), `id="key-safety_verdict"`) || strings.Contains(string(page), `id="key-api_idem"`) {
		t.Errorf("vm2's page: %v", err)
	}
	// A spec that does not parse: its file and line.
	editFile(t, filepath.Join(dir, "keyspec.yaml"), "    kind: marker\n", "    kind: marker\n    colour: red\n")
	if code, _, errOut := compare(t, dir, "doc", "--out", out); code != exitProblem || !strings.Contains(errOut, "keyspec.yaml:") || !strings.Contains(errOut, "field colour not found") {
		t.Errorf("invalid spec: exit %d: %s", code, errOut)
	}
}
