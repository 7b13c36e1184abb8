package luatest

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hanchat/luagen/luatest/coverprofile"
)

// recordCoverage turns coverage on into a directory of the test's own for the
// scripts the test loads, and back to what it was afterwards.
func recordCoverage(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	prev := coverDir()
	SetCoverDir(dir)
	t.Cleanup(func() { SetCoverDir(prev) })
	return dir
}

// noCoverage turns coverage off for the scripts the test loads, and back to
// what it was afterwards.
func noCoverage(t testing.TB) {
	t.Helper()
	prev := coverDir()
	SetCoverDir("")
	t.Cleanup(func() { SetCoverDir(prev) })
}

const branchy = `local n = tonumber(ARGV[1])
local function twice(x)
  return x * 2
end
if n > 10 then
  n = twice(n)
elseif n > 5 then
  n = n + 1
end
for i = 1, 3 do
  if i == n then return 'hit' end
end
if n < 0 then error('negative') end
return n
`

// counted is each line's statement count and each branch's, as read back.
func counted(t *testing.T, dir, sha string) (lines map[int]uint64, arms map[string]uint64) {
	t.Helper()
	p, err := coverprofile.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Scripts[sha]
	if s == nil {
		t.Fatalf("no coverage of %s in %s", sha, dir)
	}
	lines, arms = map[int]uint64{}, map[string]uint64{}
	for i, pt := range s.Points {
		switch pt.Kind {
		case coverprofile.Statement:
			lines[pt.Line] = max(lines[pt.Line], s.Counts[i])
		case coverprofile.Branch:
			arms[fmt.Sprintf("%d %s", pt.Line, pt.Arm)] += s.Counts[i]
		}
	}
	return lines, arms
}

// Every statement's runs and every if arm's takes are counted exactly, across
// runs that return early, fail, and go through a nested function, elseif,
// a loop and an implicit else; replies and errors are what they are without
// coverage.
func TestCoverageCounts(t *testing.T) {
	noCoverage(t)
	plain := mustLoad(t, branchy)
	dir := recordCoverage(t)
	sc := mustLoad(t, branchy)
	if sc.cover == nil || plain.cover != nil {
		t.Fatal("coverage is not attached to scripts loaded while it is on (only)")
	}
	srv, ref := NewServer(nil), NewServer(nil)
	for _, arg := range []string{"20", "7", "2", "1", "-4"} {
		got, want := srv.Run(sc, nil, arg), ref.Run(plain, nil, arg)
		if fmt.Sprint(got.Reply, got.Err) != fmt.Sprint(want.Reply, want.Err) {
			t.Errorf("ARGV %s: with coverage %v %v, without %v %v", arg, got.Reply, got.Err, want.Reply, want.Err)
		}
	}
	lines, arms := counted(t, dir, sc.SHA1())
	// 20: twice -> 40, loop 3, return 40. 7: -> 8, loop 3, return 8.
	// 2: loop hits at i=2 (2 rounds), return 'hit'. 1: hit at i=1 (1 round).
	// -4: loop 3, error at line 13.
	want := map[int]uint64{1: 5, 2: 5, 3: 1, 5: 5, 6: 1, 7: 4, 8: 1, 10: 5, 11: 3 + 3 + 2 + 1 + 3, 13: 3, 14: 2}
	if d := cmp.Diff(want, lines); d != "" {
		t.Errorf("line counts (-want +got):\n%s", d)
	}
	wantArms := map[string]uint64{"5 then": 1, "7 then": 1, "7 else": 3, "11 then": 2, "11 else": 10, "13 then": 1, "13 else": 2}
	if d := cmp.Diff(wantArms, arms); d != "" {
		t.Errorf("branch counts (-want +got):\n%s", d)
	}
}

// Errors keep their line with coverage on: Redis's message names the line the
// error was raised at.
func TestCoverageKeepsLines(t *testing.T) {
	src := "local x = 1\n\nlocal t = nil\nif x == 1 then\n  return t.field\nend\nreturn 0\n"
	noCoverage(t)
	want := NewServer(nil).Run(mustLoad(t, src), nil).Err
	recordCoverage(t)
	got := NewServer(nil).Run(mustLoad(t, src), nil).Err
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Fatalf("with coverage %v, without %v", got, want)
	}
}

// Runs on many goroutines (pooled states) add up exactly.
func TestCoverageConcurrentRuns(t *testing.T) {
	dir := recordCoverage(t)
	sc := mustLoad(t, "redis.call('INCR', KEYS[1])\nif redis.call('GET', KEYS[1]) == '0' then return 0 end\nreturn 1\n")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := NewServer(nil)
			for i := 0; i < 200; i++ {
				if res := srv.Run(sc, []string{"k"}); res.Err != nil {
					t.Error(res.Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	lines, arms := counted(t, dir, sc.SHA1())
	if lines[1] != 1600 || lines[3] != 1600 || arms["2 then"] != 0 || arms["2 else"] != 1600 {
		t.Errorf("lines %v arms %v, want 1600 runs each", lines, arms)
	}
}

// The counters are in the file when the process ends, however it ends: a
// child process runs a script and exits at once, without any cleanup.
func TestCoverageSurvivesExit(t *testing.T) {
	if dir := os.Getenv("LUATEST_COVER_CHILD"); dir != "" {
		SetCoverDir(dir)
		sc := mustLoad(t, "local n = 0\nfor i = 1, 10 do n = n + i end\nreturn n\n")
		for i := 0; i < 7; i++ {
			NewServer(nil).Run(sc, nil)
		}
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCoverageSurvivesExit$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LUATEST_COVER_CHILD="+dir, CoverEnv+"=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	sc := mustLoad(t, "local n = 0\nfor i = 1, 10 do n = n + i end\nreturn n\n")
	lines, _ := counted(t, dir, sc.SHA1())
	if lines[1] != 7 || lines[2] != 7*10 || lines[3] != 7 {
		t.Errorf("after the child exited: %v, want 7 runs of 10 rounds", lines)
	}
}
