package coverprofile

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A profile from another format version, or counters that do not fit their
// points, is refused naming the file; an empty directory says how to record.
func TestProfileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "no Lua coverage recorded (run go test with LUAGEN_COVER=") {
		t.Errorf("empty: %v", err)
	}
	if err := WriteMeta(dir, "abc-1-1", Meta{Version: Version, SHA1: "abc", Points: []Point{{Line: 1, Kind: Statement}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(CountsPath(dir, "abc-1-1"), make([]byte, 12), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "abc-1-1.cnt: 12 bytes of counters for 1 points") {
		t.Errorf("short counters: %v", err)
	}
	if err := WriteMeta(dir, "abc-1-1", Meta{Version: 9, SHA1: "abc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "abc-1-1.json: coverage format version 9") {
		t.Errorf("version: %v", err)
	}
}

// The points of a script: one per statement at its line, one per if arm
// (an arm with statements reads its first statement's counter).
func TestPointsOf(t *testing.T) {
	got, err := PointsOf([]byte("#!lua flags=no-writes\nlocal n = 1\nif n > 0 then\n  n = 2\nend\nreturn n\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{
		{Line: 2, Kind: Statement},
		{Line: 3, Kind: Statement},
		{Line: 3, Kind: Branch, Arm: "then", Same: 4},
		{Line: 4, Kind: Statement},
		{Line: 3, Kind: Branch, Arm: "else"},
		{Line: 6, Kind: Statement},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("points (-want +got):\n%s", d)
	}
}
