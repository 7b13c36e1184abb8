package promtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/alerts"
	"github.com/hanchat/luagen/gen/keyspec"
)

// Promtool is the path of promtool; without it the test fails (make deps
// installs Debian's prometheus package), or under -short skips.
func Promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skip("promtool is not installed (make deps installs the Debian package prometheus)")
		}
		t.Fatal("promtool is not installed: make deps installs the Debian package prometheus")
	}
	return p
}

// CheckRules writes the alerting rules of every server of every instance of
// spec and their generated unit tests, and runs promtool check rules and
// promtool test rules on them: each alert fires, with exactly its labels
// (source included) and annotations, on synthetic series that show its
// incident, and stays quiet on series that do not. An instance with fewer
// than minTests alert tests (over its servers) fails.
func CheckRules(t *testing.T, spec *keyspec.Spec, minTests int) {
	t.Helper()
	bin := Promtool(t)
	dir := t.TempDir()
	for _, in := range spec.Instances {
		n := 0
		for _, srv := range in.ServerNames() {
			name := in.Name
			if srv != "" {
				name += "-" + srv
			}
			f, notes, err := alerts.Rules(spec, in, alerts.Options{Server: srv})
			if err != nil {
				t.Fatal(err)
			}
			rules, err := f.YAML(alerts.Header(spec, in, srv, notes))
			if err != nil {
				t.Fatal(err)
			}
			tests, err := f.Tests(name + ".rules.yml")
			if err != nil {
				t.Fatal(err)
			}
			rp, tp := filepath.Join(dir, name+".rules.yml"), filepath.Join(dir, name+".test.yml")
			if err := os.WriteFile(rp, rules, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(tp, tests, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "check", "rules", rp).CombinedOutput(); err != nil {
				t.Errorf("promtool check rules %s: %v\n%s", name, err, out)
			}
			if out, err := exec.Command(bin, "test", "rules", tp).CombinedOutput(); err != nil {
				t.Errorf("promtool test rules %s: %v\n%s", name, err, out)
			}
			n += strings.Count(string(tests), "alertname:")
		}
		if n < minTests {
			t.Errorf("%s: %d alert tests, want at least %d", in.Name, n, minTests)
		}
	}
}
