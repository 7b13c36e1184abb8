// Package diff_test runs luagen diff's report on this repository's own
// history (HAN's and Elang's spec); gen/diff's tests run on fixtures.
package diff_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hanchat/luagen/gen/diff"
	"github.com/hanchat/luagen/gen/snapshot"
)

var update = flag.Bool("update", false, "rewrite testdata/*.md from the reports")

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

// On this repository's history: 682e69a added the outbox_relay script and
// elang_app's stream commands to 50db9c8.
func TestRepositoryHistory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	at := func(rev string) *snapshot.Snapshot {
		s, err := snapshot.Git(context.Background(), rev, "../../../keyspec.yaml", "../../../lua")
		if errors.Is(err, snapshot.ErrShallow) || errors.Is(err, snapshot.ErrNotRepository) {
			t.Skipf("this checkout lacks the history: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	r := diff.Compare(at("50db9c8"), at("682e69a"))
	golden(t, "history.md", r.Markdown())
	if len(r.Scripts) != 1 || r.Scripts[0].Name != "outbox_relay" || r.Scripts[0].Status != diff.Added {
		t.Errorf("scripts: %+v", r.Scripts)
	}
}
