package diff

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hanchat/luagen/gen/snapshot"
)

var update = flag.Bool("update", false, "rewrite testdata/*.md from the reports")

func dirSnapshot(t *testing.T, dir string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Dir(dir, filepath.Join("testdata", dir, "keyspec.yaml"), filepath.Join("testdata", dir, "lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Problems {
		t.Errorf("%s: %v", dir, p.Err)
	}
	return s
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, d)
	}
}

// testdata/new is testdata/old with stub_poll reading by GETRANGE, presence_beat
// refreshing the session too, session_get gone, session_peek added, and the
// events channel prefix narrower: the report says each, forward and back.
func TestMarkdown(t *testing.T) {
	old, cur := dirSnapshot(t, "old"), dirSnapshot(t, "new")
	r := Compare(old, cur)
	golden(t, "forward.md", r.Markdown())
	byName := map[string]ScriptChange{}
	for _, s := range r.Scripts {
		byName[s.Name] = s
	}
	if s := byName["stub_poll"]; s.Status != Changed || !cmp.Equal(s.CommandsAdded, []string{"GETRANGE"}) || !cmp.Equal(s.CommandsRemoved, []string{"GET"}) || !s.LuaChanged() {
		t.Errorf("stub_poll: %+v", s)
	}
	if s := byName["presence_beat"]; !cmp.Equal(s.KeysAdded, []KeyChange{{"write", "session", "app:session:{sid}"}}) || len(s.KeysRemoved) != 0 {
		t.Errorf("presence_beat: %+v", s)
	}
	if s := byName["session_get"]; s.Status != Removed || s.NewSHA1 != "" {
		t.Errorf("session_get: %+v", s)
	}
	if s := byName["session_peek"]; s.Status != Added || len(s.KeysAdded) != 2 {
		t.Errorf("session_peek: %+v", s)
	}
	if _, ok := byName["cache_put"]; ok || len(r.Scripts) != 4 {
		t.Errorf("unchanged scripts are listed: %d scripts", len(r.Scripts))
	}
	if len(r.ACL) != 1 || r.ACL[0].User != "app" || !cmp.Equal(r.ACL[0].Revoked, []string{"&app:*", "+get"}) || !cmp.Equal(r.ACL[0].Granted, []string{"&app:events:*", "+getrange", "+pttl"}) {
		t.Errorf("ACL: %+v", r.ACL)
	}
	golden(t, "back.md", Compare(cur, old).Markdown())
	if same := Compare(old, old); !same.Empty() || !strings.Contains(same.Markdown(), "No script, key access or ACL grant changes.") {
		t.Errorf("a revision against itself:\n%s", same.Markdown())
	}
}
