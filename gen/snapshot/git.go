package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/keyspec"
)

// maxArchiveBytes bounds what Git reads of a revision (the spec and the Lua
// directory): far above any spec's (keyspec.MaxSpecBytes) and scripts' size.
const maxArchiveBytes = 64 << 20

// Git reads the spec and the Lua of revision rev of the git repository that
// holds specPath, at the paths specPath and luaDir have in its work tree. It
// runs git's plumbing only (rev-parse and archive) and changes nothing:
// no checkout, no fetch. Messages name the spec "REV:path" ("HEAD~1:keyspec.yaml").
func Git(ctx context.Context, rev, specPath, luaDir string) (*Snapshot, error) {
	if strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n") {
		return nil, fmt.Errorf("--against %q: %w (a revision does not start with '-')", rev, ErrUnknownRevision)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("--against %s: %w (no git on PATH): install git, or name a directory holding the older spec and lua/", rev, ErrNoGit)
	}
	absSpec, err := realPath(specPath)
	if err != nil {
		return nil, fmt.Errorf("--against %s: %s: %w", rev, specPath, err)
	}
	// One rev-parse finds the work tree's top and the commit: its first line
	// is the top whenever the directory is in a repository.
	out, revErr := git(ctx, filepath.Dir(absSpec), "rev-parse", "--show-toplevel", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] == "" || !filepath.IsAbs(lines[0]) {
		return nil, fmt.Errorf("--against %s: %s is %w (%v): name a directory holding the older spec and lua/ instead", rev, specPath, ErrNotRepository, revErr)
	}
	top := lines[0]
	if t, err := filepath.EvalSymlinks(top); err == nil {
		top = t
	}
	if revErr != nil || len(lines) < 2 {
		if shallow, _ := git(ctx, top, "rev-parse", "--is-shallow-repository"); strings.TrimSpace(shallow) == "true" {
			return nil, fmt.Errorf("--against %s: %w: %s is a shallow clone and may not hold it (git fetch --deepen=N, or --unshallow)", rev, ErrShallow, top)
		}
		return nil, fmt.Errorf("--against %s: %w in %s (git rev-parse finds no such commit, branch or tag)", rev, ErrUnknownRevision, top)
	}
	commit := lines[1]
	specRel, err := inRepo(top, absSpec)
	if err != nil {
		return nil, fmt.Errorf("--against %s: %s: %w", rev, specPath, err)
	}
	absLua, err := realPath(luaDir)
	if err != nil {
		// The Lua directory may be gone from the work tree; it is read at rev.
		absLua, _ = filepath.Abs(luaDir)
	}
	luaRel, err := inRepo(top, absLua)
	if err != nil {
		return nil, fmt.Errorf("--against %s: %s: %w", rev, luaDir, err)
	}
	// One archive of the spec and the Lua; a revision without the Lua
	// directory (no scripts yet) is read again without it.
	tarball, err := gitBytes(ctx, top, "archive", "--format=tar", commit, "--", specRel, luaRel)
	if err != nil && strings.Contains(err.Error(), "'"+luaRel+"' did not match") {
		tarball, err = gitBytes(ctx, top, "archive", "--format=tar", commit, "--", specRel)
	}
	if err != nil && strings.Contains(err.Error(), "'"+specRel+"' did not match") {
		return nil, fmt.Errorf("%s:%s: %w: the revision has no spec at that path", rev, specRel, ErrNoSpec)
	}
	if err != nil {
		return nil, fmt.Errorf("--against %s: git archive: %v", rev, err)
	}
	specSrc, lua, err := untar(tarball, specRel, luaRel)
	if err != nil {
		return nil, fmt.Errorf("--against %s: %v", rev, err)
	}
	spec, err := keyspec.Parse(rev+":"+specRel, specSrc)
	if err != nil {
		return nil, err
	}
	return build(rev, spec, lua, rev+":"+luaRel), nil
}

// realPath is p absolute, with symbolic links resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// inRepo is abs relative to the repository's top, with slashes.
func inRepo(top, abs string) (string, error) {
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("outside the repository %s", top)
	}
	return filepath.ToSlash(rel), nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := gitBytes(ctx, dir, args...)
	return string(out), err
}

// gitBytes runs git in dir and returns its standard output, at most
// maxArchiveBytes of it (also when git fails); an error carries the first line
// git wrote to stderr.
func gitBytes(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var stdout limitedBuffer
	stdout.max = maxArchiveBytes
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stdout.over {
		return nil, fmt.Errorf("git %s: more than %d bytes", args[0], maxArchiveBytes)
	}
	if err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if msg == "" {
			msg = err.Error()
		}
		return stdout.Bytes(), errors.New(msg)
	}
	return stdout.Bytes(), nil
}

type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		return 0, errors.New("too much output")
	}
	return b.Buffer.Write(p)
}

// untar takes the spec and the files under luaRel out of a tar archive. The
// Lua keeps symbolic links as links (the compiler refuses them, as on disk).
func untar(tarball []byte, specRel, luaRel string) ([]byte, fs.FS, error) {
	lua := fstest.MapFS{}
	var spec []byte
	tr := tar.NewReader(bytes.NewReader(tarball))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading git archive: %v", err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		switch {
		case name == specRel && h.Typeflag == tar.TypeReg:
			if spec, err = io.ReadAll(io.LimitReader(tr, keyspec.MaxSpecBytes+1)); err != nil {
				return nil, nil, err
			}
		case strings.HasPrefix(name, luaRel+"/"):
			rel := strings.TrimPrefix(name, luaRel+"/")
			if !fs.ValidPath(rel) {
				continue
			}
			switch h.Typeflag {
			case tar.TypeDir:
				lua[rel] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
			case tar.TypeSymlink:
				lua[rel] = &fstest.MapFile{Mode: fs.ModeSymlink | 0o777, Data: []byte(h.Linkname)}
			case tar.TypeReg:
				data, err := io.ReadAll(tr)
				if err != nil {
					return nil, nil, err
				}
				lua[rel] = &fstest.MapFile{Mode: 0o644, Data: data}
			}
		}
	}
	if spec == nil {
		return nil, nil, fmt.Errorf("%s: %w in the archive", specRel, ErrNoSpec)
	}
	return spec, lua, nil
}
