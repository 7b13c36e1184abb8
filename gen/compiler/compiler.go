// Package compiler is the stage between the spec and the code: it reads the Lua of
// every live script of a parsed spec and checks it against the script's declared
// signature (the file exists, Redis's Lua accepts it, it reads exactly the KEYS and
// ARGV it declares, read-only scripts write nothing, error replies are declared).
// Code generation, lint and ACL derivation all start from what it returns.
package compiler

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
)

// Source is the Lua of one live script, read and checked against its signature.
type Source struct {
	Script *keyspec.Script
	Src    []byte
	Info   *luascript.Info
	SHA1   string
}

// Load reads the Lua of every live script from lua (rooted at the Lua
// directory) and checks it against the spec: the file exists, Redis's Lua accepts
// it, it reads exactly the KEYS and ARGV positions the spec declares, and a
// read-only script says no-writes and calls no write command. A .lua file no spec
// entry declares is an error too. Every problem found is returned as a
// keyspec.List that names file and line.
func Load(spec *keyspec.Spec, lua fs.FS, luaDir string) (map[string]*Source, error) {
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
