package cover

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/luatest/coverprofile"
)

var update = flag.Bool("update", false, "rewrite testdata/want.txt and want.html")

// record runs testdata's app/hit script under luatest with coverage on, as
// its tests would: a first hit, a second one, and one refused.
func record(t *testing.T) (*keyspec.Spec, map[string]*compiler.Source, *coverprofile.Profile) {
	t.Helper()
	spec, err := keyspec.Load("testdata/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("testdata/lua"), "testdata/lua")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	luatest.SetCoverDir(dir)
	t.Cleanup(func() { luatest.SetCoverDir(os.Getenv(luatest.CoverEnv)) })
	sc, err := luatest.Load("lua/app/hit.lua", srcs["hit"].Src)
	if err != nil {
		t.Fatal(err)
	}
	srv := luatest.NewServer(nil)
	for _, by := range []int{3, 4, -10} {
		srv.Run(sc, []string{"app:hits:home"}, by)
	}
	// A script that is not the spec's is recorded too, and not counted.
	other, err := luatest.Load("other.lua", []byte("return 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Run(other, nil)
	p, err := coverprofile.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return spec, srcs, p
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", path, d)
	}
}

// hit.lua has 8 lines with a statement (1, 2, 3, 4, 6, 7, 8, 10) and two ifs
// (4 arms, the second if's else absent): by 3 (the first hit) and by 4 run all
// but the error line and the first if's then arm, by -10 takes those; each
// count is exact. mark.lua never runs.
func TestReport(t *testing.T) {
	spec, srcs, p := record(t)
	r, err := Build(spec, srcs, p)
	if err != nil {
		t.Fatal(err)
	}
	app, tools := r.Instances[0], r.Instances[1]
	hit := app.Scripts[0]
	if !hit.Recorded || hit.Lines != 8 || hit.LinesRun != 8 || hit.Branches != 4 || hit.BranchesRun != 4 {
		t.Errorf("hit: %+v", hit.Counts)
	}
	if d := cmp.Diff(map[int]uint64{1: 3, 2: 3, 3: 3, 4: 1, 6: 2, 7: 2, 8: 1, 10: 2}, hit.Hits); d != "" {
		t.Errorf("hit's line counts (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Arm{{"then", 1}, {"else", 1}}, hit.Arms[7]); d != "" {
		t.Errorf("the arms of line 7 (-want +got):\n%s", d)
	}
	mark := tools.Scripts[0]
	if mark.Recorded || mark.Lines != 3 || mark.LinesRun != 0 || mark.Branches != 2 {
		t.Errorf("mark: %+v", mark)
	}
	if r.Unmatched != 1 {
		t.Errorf("unmatched %d, want 1 (other.lua)", r.Unmatched)
	}
	golden(t, "want.txt", []byte(r.Text()))
	page, err := r.HTML()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "want.html", page)
	if len(r.Check()) != 0 {
		t.Errorf("app is fully covered: %v", r.Check())
	}

	// Without the refused run, line 4 and an arm are missed: lines 7/8 = 87.5%
	// meets 80, branches 3/4 = 75% misses 90.
	luatest.SetCoverDir("")
	for i, pt := range p.Scripts[hit.SHA1].Points {
		if pt.Line == 4 || pt.Line == 3 && pt.Kind == coverprofile.Branch && pt.Arm == "then" {
			p.Scripts[hit.SHA1].Counts[i] = 0
		}
	}
	r, err = Build(spec, srcs, p)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Check()
	if len(got) != 1 || !strings.HasPrefix(got[0].String(), "keyspec.yaml:7: coverage-floor: instance app: branches 75.0% (3 of 4) below the floor 90%; the least covered: hit (1 lines not run)") {
		t.Errorf("check: %v", got)
	}
}
