package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hanchat/luagen/luatest"
)

func TestCover(t *testing.T) {
	dir := workspace(t)
	// vm1 gets a floor of 50% of its own (whatever floors the spec declares).
	specFile := filepath.Join(dir, "keyspec.yaml")
	b, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	b = regexp.MustCompile(`(?m)^ +coverage_floor:.*\n`).ReplaceAll(b, nil)
	if err := os.WriteFile(specFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	editFile(t, specFile, "    source: \"HAN VM1 spec §1, §2\"\n", "    source: \"HAN VM1 spec §1, §2\"\n    coverage_floor: {lines: 50, branches: 50}\n")
	b, _ = os.ReadFile(specFile)
	floorLine := 1 + strings.Count(string(b[:strings.Index(string(b), "coverage_floor")]), "\n")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"cover"}, exitUsage, "--profile is required"},
		{[]string{"cover", "--profile", filepath.Join(dir, "none")}, exitUsage, "not a directory (record with LUAGEN_COVER="},
		{[]string{"cover", "--profile", t.TempDir()}, exitProblem, "no Lua coverage recorded (run go test with LUAGEN_COVER="},
	} {
		code, _, errOut := compare(t, dir, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, want %d; %q (want %q)", c.args, code, c.code, errOut, c.msg)
		}
	}

	// Record one script's runs, as a test of it would.
	profile := t.TempDir()
	luatest.SetCoverDir(profile)
	src, err := os.ReadFile(filepath.Join(dir, "lua/vm1/jwks_negative_check.lua"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := luatest.Load("jwks_negative_check.lua", src)
	luatest.SetCoverDir(os.Getenv(luatest.CoverEnv))
	if err != nil {
		t.Fatal(err)
	}
	srv := luatest.NewServer(nil)
	srv.Run(sc, []string{"han:api:jwks:negative:x"})

	html := filepath.Join(t.TempDir(), "cover.html")
	code, out, errOut := compare(t, dir, "cover", "--profile", profile, "--html", html)
	if code != exitOK || !regexp.MustCompile(`(?m)^vm1 +jwks_negative_check +\d+/\d+ +\d+\.\d%`).MatchString(out) || !strings.Contains(out, "(no test ran it)") {
		t.Fatalf("report: exit %d\n%s%s", code, out, errOut)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), `id="s-vm1-jwks_negative_check"`) {
		t.Errorf("html: %v", err)
	}
	code, _, errOut = compare(t, dir, "cover", "--profile", profile, "--check")
	if code != exitProblem || !regexp.MustCompile(fmt.Sprintf(`(?m)^keyspec\.yaml:%d: coverage-floor: instance vm1: lines \d+\.\d%% \(\d+ of \d+\) below the floor 50%%`, floorLine)).MatchString(errOut) {
		t.Errorf("check: exit %d\n%s", code, errOut)
	}
}
