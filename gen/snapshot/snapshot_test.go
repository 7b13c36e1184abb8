package snapshot

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is the tool's own small spec and its Lua (three scripts).
const fixture = "../testdata/small"

// At reads a directory (its keyspec.yaml and lua/), a spec file (the lua/
// beside it), and says which of its errors a revision that cannot be read is.
func TestAt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(fixture)); err != nil {
		t.Fatal(err)
	}
	for _, against := range []string{dir, filepath.Join(dir, "keyspec.yaml")} {
		s, err := At(ctx, against, "keyspec.yaml", "lua")
		if err != nil {
			t.Fatalf("%s: %v", against, err)
		}
		if len(s.Sources) != 3 || len(s.Problems) != 0 || s.Label != against {
			t.Errorf("%s: %d sources, problems %v, label %q", against, len(s.Sources), s.Problems, s.Label)
		}
	}
	if _, err := At(ctx, t.TempDir(), "keyspec.yaml", "lua"); !errors.Is(err, ErrNoSpec) || !strings.Contains(err.Error(), "keyspec.yaml does not exist") {
		t.Errorf("a directory without a spec: %v", err)
	}
	// A revision of a git repository: its spec at HEAD names the revision.
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	repo := t.TempDir()
	if err := os.CopyFS(repo, os.DirFS(fixture)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "fixture"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	spec, lua := filepath.Join(repo, "keyspec.yaml"), filepath.Join(repo, "lua")
	s, err := At(ctx, "HEAD", spec, lua)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.File != "HEAD:keyspec.yaml" || s.LuaDir != "HEAD:lua" || len(s.Sources) != 3 {
		t.Errorf("HEAD: file %q, lua %q, %d sources", s.Spec.File, s.LuaDir, len(s.Sources))
	}
	if _, err := At(ctx, "no/such/branch", spec, lua); !errors.Is(err, ErrUnknownRevision) {
		t.Errorf("unknown: %v", err)
	}
	outside := filepath.Join(t.TempDir(), "keyspec.yaml")
	if err := os.WriteFile(outside, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := At(ctx, "HEAD", outside, "lua"); !errors.Is(err, ErrNotRepository) {
		t.Errorf("a spec outside a repository: %v", err)
	}
}
