// Package snapshot reads a spec and its Lua as of one revision: the working
// tree, a directory holding an older copy, or a git revision of the repository
// the spec lives in (read with git show and git archive, never by checking it
// out). luagen breaking and luagen diff compare two snapshots.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// Snapshot is a parsed spec and the Lua beside it, at one revision.
type Snapshot struct {
	// Label names the revision in messages: "HEAD~1", a directory, or "" for
	// the working tree.
	Label string
	Spec  *keyspec.Spec
	// Lua is the Lua directory (rooted at it) and LuaDir how messages name it.
	Lua    fs.FS
	LuaDir string
	// Sources are the scripts the compiler could read (compiler.Check), and
	// Problems what it refused; an older revision may hold scripts today's
	// checks refuse, and a comparison still reads what it can of them.
	Sources  map[string]*compiler.Source
	Problems []compiler.Problem
}

// Errors a revision that cannot be read matches with errors.Is.
var (
	// ErrNoGit: the git command is not installed (or not on PATH).
	ErrNoGit = errors.New("git is not installed")
	// ErrNotRepository: the spec is not inside a git work tree.
	ErrNotRepository = errors.New("not in a git repository")
	// ErrUnknownRevision: no commit of that name in the repository.
	ErrUnknownRevision = errors.New("unknown revision")
	// ErrShallow: the revision is missing from a shallow clone.
	ErrShallow = errors.New("revision missing from a shallow clone")
	// ErrNoSpec: the revision or directory holds no spec at the path.
	ErrNoSpec = errors.New("no spec there")
)

// Working reads the spec at specPath and the Lua under luaDir as they are on disk.
func Working(specPath, luaDir string) (*Snapshot, error) {
	spec, err := keyspec.Load(specPath)
	if err != nil {
		return nil, err
	}
	return build("", spec, os.DirFS(luaDir), luaDir), nil
}

// At reads the revision against names: a directory holding an older copy (its
// spec is the file named like specPath's, its Lua the directory named like
// luaDir's, both inside it), a spec file (its Lua the luaDir beside it), or
// else a git revision of the repository specPath is in, with the spec and the
// Lua at the same paths in it as specPath and luaDir in the work tree.
func At(ctx context.Context, against, specPath, luaDir string) (*Snapshot, error) {
	if against == "" {
		return nil, errors.New("snapshot: no revision named")
	}
	if fi, err := os.Stat(against); err == nil {
		if fi.IsDir() {
			return Dir(against, filepath.Join(against, filepath.Base(specPath)), filepath.Join(against, filepath.Base(filepath.Clean(luaDir))))
		}
		return Dir(against, against, filepath.Join(filepath.Dir(against), filepath.Base(filepath.Clean(luaDir))))
	}
	return Git(ctx, against, specPath, luaDir)
}

// Dir reads an older copy on disk: the spec at specPath and the Lua under
// luaDir, labelled label in messages.
func Dir(label, specPath, luaDir string) (*Snapshot, error) {
	src, err := keyspec.ReadFile(specPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w: %s does not exist", label, ErrNoSpec, specPath)
		}
		return nil, err
	}
	spec, err := keyspec.Parse(specPath, src)
	if err != nil {
		return nil, err
	}
	return build(label, spec, os.DirFS(luaDir), luaDir), nil
}

func build(label string, spec *keyspec.Spec, lua fs.FS, luaDir string) *Snapshot {
	srcs, problems := compiler.Check(spec, lua, luaDir)
	return &Snapshot{Label: label, Spec: spec, Lua: lua, LuaDir: luaDir, Sources: srcs, Problems: problems}
}

// SpecFile is how messages name the snapshot's spec: "keyspec.yaml", or
// "HEAD~1:keyspec.yaml" for a git revision.
func (s *Snapshot) SpecFile() string { return s.Spec.File }
