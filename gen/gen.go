// Package gen turns keyspec.yaml and the scripts in lua/ into the generated Go
// packages, in memory: Generate returns file contents, Write puts them on disk and
// Diff compares them with what is there. Its subpackages are the stages, in order,
// split the way sqlc splits config, compiler and codegen: keyspec (parse and validate
// the spec), luascript (read one script as Redis would), compiler (check every script
// against its signature and Redis's command table, rediscmd), codegen (emit Go); lint,
// acl and serverconf start from the compiler's output too.
package gen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"github.com/hanchat/luagen/gen/codegen"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/functions"
	"github.com/hanchat/luagen/gen/keyspec"
)

// Files maps a path under the output directory ("app/scripts.go") to its contents.
type Files map[string][]byte

// Paths lists the files' paths, sorted.
func (f Files) Paths() []string { return slices.Sorted(maps.Keys(f)) }

// Options select what Generate does.
type Options struct {
	// LuaDir is how errors name the Lua directory ("lua").
	LuaDir string
	// Instances limits generation to these instances; empty means all.
	Instances []string
}

// Generate renders the packages of the selected instances. It reads only lua; the
// spec is already parsed.
func Generate(spec *keyspec.Spec, lua fs.FS, opts Options) (Files, error) {
	instances, err := selectInstances(spec, opts.Instances)
	if err != nil {
		return nil, err
	}
	srcs, err := compiler.Load(spec, lua, opts.LuaDir)
	if err != nil {
		return nil, err
	}
	out := Files{}
	for _, in := range instances {
		var scripts []codegen.Script
		for _, s := range spec.ScriptsOf(in) {
			src := srcs[s.ID]
			scripts = append(scripts, codegen.Script{Spec: s, Source: string(src.Src), SHA1: src.SHA1, Includes: src.Includes()})
		}
		files, err := codegen.Instance(spec, in, scripts)
		if err != nil {
			return nil, err
		}
		for name, b := range files {
			out[in.Name+"/"+name] = b
		}
		if in.Functions() {
			lib, err := functions.Build(spec, in, srcs)
			if err != nil {
				return nil, err
			}
			b, err := libraryFile(in, lib)
			if err != nil {
				return nil, err
			}
			out[in.Name+"/library.go"] = b
		}
	}
	return out, nil
}

func selectInstances(spec *keyspec.Spec, names []string) ([]*keyspec.Instance, error) {
	if len(names) == 0 {
		return spec.Instances, nil
	}
	var out []*keyspec.Instance
	for _, n := range names {
		in := spec.Instance(n)
		if in == nil {
			var known []string
			for _, i := range spec.Instances {
				known = append(known, i.Name)
			}
			return nil, fmt.Errorf("instance %q is not declared in %s (declared: %s)", n, spec.File, strings.Join(known, ", "))
		}
		out = append(out, in)
	}
	return out, nil
}

// header is how a file luagen owns begins.
var header = []byte("// " + codegen.Header)

// Write puts files under dir and removes stale generated files: those of the
// instance directories files has that files no longer holds, and, when all is
// true (files are every instance of the spec), those of any other directory under
// dir, such as an instance the spec no longer declares. It never removes a file it
// did not generate.
func Write(dir string, files Files, all bool) error {
	for _, p := range files.Paths() {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, files[p]) {
			continue
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
	}
	for _, p := range stale(dir, files, all) {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return err
		}
	}
	return nil
}

// stale lists generated files that files does not hold, in the instance
// directories of files or, when all, in every directory under dir.
func stale(dir string, files Files, all bool) []string {
	dirs := map[string]bool{}
	for p := range files {
		dirs[path.Dir(p)] = true
	}
	if all {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				dirs[e.Name()] = true
			}
		}
	}
	var out []string
	for d := range dirs {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(d)))
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := d + "/" + e.Name()
			if e.IsDir() || files[p] != nil || !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p))); err == nil && bytes.HasPrefix(b, header) {
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Drift is one difference between generated files and a directory.
type Drift struct {
	Path string // under the output directory
	Kind string // "missing", "changed" or "stale"
	Diff string // for "changed": a unified diff, on disk -> generated, at most maxDiffLines
}

// maxDiffLines bounds the diff printed for one file.
const maxDiffLines = 40

// Diff compares files with dir: a file missing or different on disk, and a
// generated file on disk that files does not hold (see Write for all), are drift.
func Diff(dir string, files Files, all bool) ([]Drift, error) {
	var out []Drift
	for _, p := range files.Paths() {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, Drift{Path: p, Kind: "missing"})
		case err != nil:
			return nil, err
		case !bytes.Equal(got, files[p]):
			out = append(out, Drift{Path: p, Kind: "changed", Diff: lineDiff(p, string(got), string(files[p]))})
		}
	}
	for _, p := range stale(dir, files, all) {
		out = append(out, Drift{Path: p, Kind: "stale"})
	}
	return out, nil
}

func lineDiff(path, onDisk, generated string) string {
	d := udiff.Unified(path+" (on disk)", path+" (generated)", onDisk, generated)
	lines := strings.Split(strings.TrimRight(d, "\n"), "\n")
	if len(lines) > maxDiffLines {
		lines = append(lines[:maxDiffLines], fmt.Sprintf("... (%d more lines)", len(lines)-maxDiffLines))
	}
	return strings.Join(lines, "\n")
}
