package alerts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/alerts"
	"github.com/hanchat/luagen/gen/keyspec"
)

// fixture is the tool's own small spec (HAN's is checked in tests/han/alerts).
func fixture(t testing.TB) *keyspec.Spec {
	t.Helper()
	spec, err := keyspec.Load("../testdata/small/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func promtool(t *testing.T) string {
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

// The rules of every instance pass promtool check rules, and their generated
// unit tests pass promtool test rules: each alert fires, with exactly its
// labels (source included) and annotations, on synthetic series that show
// its incident, and stays quiet on series that do not.
func TestPromtoolChecksAndTestsTheRules(t *testing.T) {
	bin := promtool(t)
	spec := fixture(t)
	dir := t.TempDir()
	for _, in := range spec.Instances {
		f, notes, err := alerts.Rules(spec, in, alerts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rules, err := f.YAML(alerts.Header(spec, in, "", notes))
		if err != nil {
			t.Fatal(err)
		}
		tests, err := f.Tests(in.Name + ".rules.yml")
		if err != nil {
			t.Fatal(err)
		}
		rp, tp := filepath.Join(dir, in.Name+".rules.yml"), filepath.Join(dir, in.Name+".test.yml")
		if err := os.WriteFile(rp, rules, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tp, tests, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "check", "rules", rp).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", in.Name, err, out)
		}
		out, err := exec.Command(bin, "test", "rules", tp).CombinedOutput()
		if err != nil {
			t.Errorf("promtool test rules %s: %v\n%s", in.Name, err, out)
		}
		if n := strings.Count(string(tests), "alertname:"); n < 20 {
			t.Errorf("%s: %d alert tests", in.Name, n)
		}
	}
}
