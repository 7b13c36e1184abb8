// Package gen turns keyspec.yaml and the scripts in lua/ into the generated Go
// packages, in memory: Generate returns file contents, Write puts them on disk and
// Diff compares them with what is there. Its subpackages split the work the way
// sqlc does: keyspec (config), luascript (reading the Lua), codegen (emitting Go).
package gen

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"github.com/hanchat/luagen/gen/codegen"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
)

// Files maps a path under the output directory ("vm1/scripts.go") to its contents.
type Files map[string][]byte

// Paths lists the files' paths, sorted.
func (f Files) Paths() []string {
	out := make([]string, 0, len(f))
	for p := range f {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Options select what Generate does.
type Options struct {
	// LuaDir is how errors name the Lua directory ("lua").
	LuaDir string
	// Instances limits generation to these instances; empty means all.
	Instances []string
}

// Source is the Lua of one live script, read and checked against its signature.
type Source struct {
	Script *keyspec.Script
	Src    []byte
	Info   *luascript.Info
	SHA1   string
}

// LoadScripts reads the Lua of every live script from lua (rooted at the Lua
// directory) and checks it against the spec: the file exists, Redis's Lua accepts
// it, it reads exactly the KEYS and ARGV positions the spec declares, and a
// read-only script says no-writes and calls no write command. A .lua file no spec
// entry declares is an error too. Every problem found is returned as a
// keyspec.List that names file and line.
func LoadScripts(spec *keyspec.Spec, lua fs.FS, luaDir string) (map[string]*Source, error) {
	if luaDir == "" {
		luaDir = "lua"
	}
	var errs keyspec.List
	out := map[string]*Source{}
	declared := map[string]bool{}
	for _, s := range spec.Scripts {
		declared[s.LuaFile()] = true
		if !s.Live() {
			continue
		}
		display := path.Join(luaDir, s.LuaFile())
		src, err := fs.ReadFile(lua, s.LuaFile())
		if err != nil {
			msg := fmt.Sprintf("%s: cannot read: %v", display, err)
			if errors.Is(err, fs.ErrNotExist) {
				msg = display + ": file not found"
			}
			errs = append(errs, &keyspec.Error{Pos: s.Pos, Entry: fmt.Sprintf("script %q", s.Name), Msg: msg})
			continue
		}
		info, err := luascript.Analyze(display, src)
		if err != nil {
			var se *luascript.SyntaxError
			if errors.As(err, &se) {
				errs = append(errs, &keyspec.Error{Pos: keyspec.Pos{File: se.File, Line: se.Line}, Msg: se.Msg})
			} else {
				errs = append(errs, &keyspec.Error{Pos: keyspec.Pos{File: display}, Msg: err.Error()})
			}
			continue
		}
		errs = append(errs, checkSignature(s, info, display)...)
		sum := sha1.Sum(src)
		out[s.Name] = &Source{Script: s, Src: src, Info: info, SHA1: hex.EncodeToString(sum[:])}
	}
	for _, in := range spec.Instances {
		entries, err := fs.ReadDir(lua, in.Name)
		if err != nil {
			continue // no directory: every declared script was reported missing above
		}
		for _, e := range entries {
			file := in.Name + "/" + e.Name()
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".lua") || declared[file] {
				continue
			}
			errs = append(errs, &keyspec.Error{Pos: keyspec.Pos{File: path.Join(luaDir, file)}, Msg: fmt.Sprintf("script %q is not declared in %s: add its signature under scripts", strings.TrimSuffix(e.Name(), ".lua"), spec.File)})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func checkSignature(s *keyspec.Script, info *luascript.Info, display string) keyspec.List {
	var errs keyspec.List
	entry := fmt.Sprintf("script %q", s.Name)
	at := func(line int) keyspec.Pos { return keyspec.Pos{File: display, Line: line} }
	dynKeys, dynArgs := false, false
	readKeys, readArgs := map[int]bool{}, map[int]bool{}
	for _, r := range info.Keys {
		if r.Index == 0 {
			dynKeys = true
			continue
		}
		readKeys[r.Index] = true
		if r.Index > len(s.Keys) {
			errs = append(errs, &keyspec.Error{Pos: at(r.Line), Msg: fmt.Sprintf("reads KEYS[%d], but %s declares %d KEYS (%s:%d)", r.Index, entry, len(s.Keys), s.Pos.File, s.Line)})
		}
	}
	for _, r := range info.Argv {
		if r.Index == 0 {
			dynArgs = true
			continue
		}
		readArgs[r.Index] = true
		if r.Index > len(s.Argv) {
			errs = append(errs, &keyspec.Error{Pos: at(r.Line), Msg: fmt.Sprintf("reads ARGV[%d], but %s declares %d ARGV (%s:%d)", r.Index, entry, len(s.Argv), s.Pos.File, s.Line)})
		}
	}
	if !dynKeys {
		for i, k := range s.Keys {
			if !readKeys[i+1] {
				errs = append(errs, &keyspec.Error{Pos: k.Pos, Entry: fmt.Sprintf("%s KEYS[%d] %q", entry, i+1, k.Name), Msg: display + " never reads it"})
			}
		}
	}
	if !dynArgs {
		for i, a := range s.Argv {
			if !readArgs[i+1] {
				errs = append(errs, &keyspec.Error{Pos: a.Pos, Entry: fmt.Sprintf("%s ARGV[%d] %q", entry, i+1, a.Name), Msg: display + " never reads it"})
			}
		}
	}
	noWrites := info.HasFlag("no-writes")
	switch {
	case s.ReadOnly && !noWrites:
		errs = append(errs, &keyspec.Error{Pos: s.Pos, Entry: entry, Msg: fmt.Sprintf("read_only, but %s does not start with #!lua flags=no-writes", display)})
	case !s.ReadOnly && noWrites:
		errs = append(errs, &keyspec.Error{Pos: s.Pos, Entry: entry, Msg: fmt.Sprintf("%s says flags=no-writes; declare read_only: true", display)})
	}
	for _, d := range info.Dynamic {
		errs = append(errs, &keyspec.Error{Pos: at(d.Line), Msg: fmt.Sprintf("%s: the static reading cannot follow it, and the ACL, read-only and key checks rest on that reading", d.What)})
	}
	for _, c := range info.Calls {
		cmd, known := luascript.Commands[c.Command]
		switch {
		case c.Command == "":
			// A dynamic command: luagen lint and luagen acl refuse it.
		case !known:
			errs = append(errs, &keyspec.Error{Pos: at(c.Line), Msg: fmt.Sprintf("redis.%s(%q, ...): not a command luascript.Commands knows; add it with its write and key flags", c.Fn, c.Command)})
		case s.ReadOnly && cmd.Write:
			errs = append(errs, &keyspec.Error{Pos: at(c.Line), Msg: fmt.Sprintf("%s is read_only but calls %s", entry, strings.ToUpper(c.Command))})
		case cmd.Keyed && c.NArgs > 0 && c.FirstKey == 0:
			errs = append(errs, &keyspec.Error{Pos: at(c.Line), Msg: fmt.Sprintf("%s on a key not taken from KEYS: a script touches only the keys passed in KEYS", strings.ToUpper(c.Command))})
		}
	}
	declared := map[string]bool{}
	for _, e := range s.Errors {
		declared[e.Code] = true
	}
	used := map[string]bool{}
	for _, r := range info.Errors {
		switch {
		case r.Code == "":
			errs = append(errs, &keyspec.Error{Pos: at(r.Line), Msg: "redis.error_reply without a literal 'CODE message': callers match errors by their declared code"})
		case !declared[r.Code]:
			errs = append(errs, &keyspec.Error{Pos: at(r.Line), Msg: fmt.Sprintf("error reply %s is not declared under %s's errors", r.Code, entry)})
		}
		used[r.Code] = true
	}
	for _, e := range s.Errors {
		if !used[e.Code] {
			errs = append(errs, &keyspec.Error{Pos: e.Pos, Entry: entry, Msg: fmt.Sprintf("declares error %s, which %s never replies", e.Code, display)})
		}
	}
	return errs
}

// Generate renders the packages of the selected instances. It reads only lua; the
// spec is already parsed.
func Generate(spec *keyspec.Spec, lua fs.FS, opts Options) (Files, error) {
	instances, err := selectInstances(spec, opts.Instances)
	if err != nil {
		return nil, err
	}
	srcs, err := LoadScripts(spec, lua, opts.LuaDir)
	if err != nil {
		return nil, err
	}
	out := Files{}
	for _, in := range instances {
		var scripts []codegen.Script
		for _, s := range spec.ScriptsOf(in) {
			src := srcs[s.Name]
			scripts = append(scripts, codegen.Script{Spec: s, Source: string(src.Src), SHA1: src.SHA1})
		}
		files, err := codegen.Instance(spec, in, scripts)
		if err != nil {
			return nil, err
		}
		for name, b := range files {
			out[in.Name+"/"+name] = b
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
