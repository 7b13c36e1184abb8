package diff

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
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

// On this repository's history: 682e69a added the outbox_relay script and
// elang_app's stream commands to 50db9c8.
func TestRepositoryHistory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	at := func(rev string) *snapshot.Snapshot {
		s, err := snapshot.Git(context.Background(), rev, "../../keyspec.yaml", "../../lua")
		if errors.Is(err, snapshot.ErrShallow) || errors.Is(err, snapshot.ErrNotRepository) {
			t.Skipf("this checkout lacks the history: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	r := Compare(at("50db9c8"), at("682e69a"))
	golden(t, "history.md", r.Markdown())
	if len(r.Scripts) != 1 || r.Scripts[0].Name != "outbox_relay" || r.Scripts[0].Status != Added {
		t.Errorf("scripts: %+v", r.Scripts)
	}
}
