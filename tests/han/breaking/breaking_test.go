// Package breaking_test runs luagen breaking's rules on this repository's
// own history (HAN's and Elang's spec); gen/breaking's tests run on fixtures.
package breaking_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hanchat/luagen/gen/breaking"
	"github.com/hanchat/luagen/gen/snapshot"
)

func render(fs []breaking.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

// gitAt reads this repository's spec at a commit; it skips where the clone
// does not have the commit (a shallow clone: an environment reason).
func gitAt(t *testing.T, rev string) *snapshot.Snapshot {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	s, err := snapshot.Git(context.Background(), rev, "../../../keyspec.yaml", "../../../lua")
	if errors.Is(err, snapshot.ErrShallow) || errors.Is(err, snapshot.ErrNotRepository) {
		t.Skipf("this checkout lacks the history: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// On this repository's own history: commit 682e69a added Elang's outbox (keys
// outbox_stream and outbox_dedupe, script outbox_relay, elang_app's stream
// commands) to its parent 50db9c8, and changed nothing else of the spec. Going
// forward breaks nothing; going back (a revert) strands both keys, removes the
// script and takes elang_app's stream grants away.
func TestRepositoryHistory(t *testing.T) {
	before, after := gitAt(t, "50db9c8"), gitAt(t, "682e69a")
	if before.Spec.File != "50db9c8:keyspec.yaml" {
		t.Errorf("spec file %q", before.Spec.File)
	}
	forward, err := breaking.Compare(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if len(forward) != 0 {
		t.Errorf("50db9c8 -> 682e69a: want no finding, got:\n%s", render(forward))
	}
	back, err := breaking.Compare(after, before)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range back {
		got = append(got, f.Rule+" "+f.Entry)
	}
	want := []string{"grant-lost users.elang_app", "key-removed keys.outbox_stream", "key-removed keys.outbox_dedupe", "script-removed scripts.outbox_relay"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("682e69a -> 50db9c8 (-want +got):\n%s\n%s", d, render(back))
	}
	for _, f := range back {
		if f.Rule == "grant-lost" && !strings.Contains(f.Msg, "+xadd (script outbox_relay)") {
			t.Errorf("grant-lost does not name the script that needs XADD: %s", f.Msg)
		}
		if f.Rule == "key-removed" && !strings.HasPrefix(f.File, "682e69a:") {
			t.Errorf("a removed key is not placed in the revision that had it: %s", f)
		}
	}
}
