package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// At reads a directory (its keyspec.yaml and lua/), a spec file (the lua/
// beside it), and says which of its errors a revision that cannot be read is.
func TestAt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := os.ReadFile("../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keyspec.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(mustAbs(t, "../../lua")), filepath.Join(dir, "lua")); err != nil {
		t.Fatal(err)
	}
	for _, against := range []string{dir, filepath.Join(dir, "keyspec.yaml")} {
		s, err := At(ctx, against, "keyspec.yaml", "lua")
		if err != nil {
			t.Fatalf("%s: %v", against, err)
		}
		if len(s.Sources) < 30 || len(s.Problems) != 0 || s.Label != against {
			t.Errorf("%s: %d sources, problems %v, label %q", against, len(s.Sources), s.Problems, s.Label)
		}
	}
	if _, err := At(ctx, t.TempDir(), "keyspec.yaml", "lua"); !errors.Is(err, ErrNoSpec) || !strings.Contains(err.Error(), "keyspec.yaml does not exist") {
		t.Errorf("a directory without a spec: %v", err)
	}
	// A revision of this repository: its spec at HEAD names the revision.
	s, err := At(ctx, "HEAD", "../../keyspec.yaml", "../../lua")
	if errors.Is(err, ErrNotRepository) {
		t.Skipf("not in a git checkout: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.File != "HEAD:keyspec.yaml" || s.LuaDir != "HEAD:lua" || len(s.Sources) < 30 {
		t.Errorf("HEAD: file %q, lua %q, %d sources", s.Spec.File, s.LuaDir, len(s.Sources))
	}
	if _, err := At(ctx, "no/such/branch", "../../keyspec.yaml", "../../lua"); !errors.Is(err, ErrUnknownRevision) {
		t.Errorf("unknown: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
