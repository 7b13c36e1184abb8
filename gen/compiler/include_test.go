package compiler_test

import (
	"crypto/sha1"
	"encoding/hex"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/compiler"
)

// Included Lua is flattened into the script before anything reads it: the
// source (and so the SHA1 EVALSHA and the functions library use) is one
// script, each file goes in once, and the included files are not taken for
// undeclared scripts.
func TestIncludeFlattens(t *testing.T) {
	spec := specWithScript(t, false)
	files := fstest.MapFS{
		"a/s.lua":            {Data: []byte("--- @include \"lib/guard\"\n--- @include \"../shared/value.lua\"\n--- @include \"lib/guard\"\nreturn guard(value(ARGV[1]))\n")},
		"a/lib/guard.lua":    {Data: []byte("--- @include \"../../shared/value\"\nlocal function guard(v) return redis.call('SET', KEYS[1], v, 'PX', 60000) and 1 or 0 end\n")},
		"shared/value.lua":   {Data: []byte("local function value(v) return v end")},
		"a/not_a_script.txt": {Data: []byte("notes")},
	}
	srcs, err := compiler.Load(spec, files, "lua")
	if err != nil {
		t.Fatal(err)
	}
	src := srcs["s"]
	want := "local function value(v) return v end\n" +
		"local function guard(v) return redis.call('SET', KEYS[1], v, 'PX', 60000) and 1 or 0 end\n" +
		"\n" + // value.lua again: included once already
		"\n" + // guard again
		"return guard(value(ARGV[1]))\n"
	if string(src.Src) != want {
		t.Fatalf("flattened:\n%s\nwant:\n%s", src.Src, want)
	}
	sum := sha1.Sum([]byte(want))
	if src.SHA1 != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA1 %s is not the flattened script's", src.SHA1)
	}
	if got := strings.Join(src.Includes(), ","); got != "a/lib/guard.lua,shared/value.lua" {
		t.Errorf("Includes = %s", got)
	}
	for line, want := range map[int]string{1: "lua/shared/value.lua:1", 2: "lua/a/lib/guard.lua:2", 4: "lua/a/s.lua:3", 5: "lua/a/s.lua:4"} {
		if at := src.Position(line); at.File+":"+strconv.Itoa(at.Line) != want {
			t.Errorf("line %d comes from %s:%d, want %s", line, at.File, at.Line, want)
		}
	}
}

// What the reading finds in an included file, and what it refuses of an
// include, names the included file and line, or the directive's.
func TestIncludeErrorsNameThePlace(t *testing.T) {
	for name, tc := range map[string]struct {
		files fstest.MapFS
		want  string
	}{
		"a syntax error in an include": {fstest.MapFS{
			"a/s.lua": {Data: []byte("-- s\n--- @include \"h\"\nreturn {KEYS[1], ARGV[1]}\n")},
			"a/h.lua": {Data: []byte("local x = 1\nlocal y = = 2\n")},
		}, "lua/a/h.lua:2:"},
		"a finding in an include": {fstest.MapFS{
			"a/s.lua": {Data: []byte("--- @include \"h\"\nreturn {KEYS[1], ARGV[1]}\n")},
			"a/h.lua": {Data: []byte("-- the helper\nredis.call('SET', 'x:forged', 1)\n")},
		}, `lua/a/h.lua:2: SET: argument 2 of redis.call is a key, and it is "x:forged", not taken from KEYS`},
		"an include cycle": {fstest.MapFS{
			"a/s.lua":     {Data: []byte("--- @include \"h\"\nreturn {KEYS[1], ARGV[1]}\n")},
			"a/h.lua":     {Data: []byte("-- h\n--- @include \"lib/i\"\n")},
			"a/lib/i.lua": {Data: []byte("--- @include \"../h\"\n")},
		}, `lua/a/lib/i.lua:1: @include "../h": an include cycle (a/s.lua -> a/h.lua -> a/lib/i.lua -> a/h.lua)`},
		"a script including itself": {fstest.MapFS{
			"a/s.lua": {Data: []byte("--- @include \"s\"\nreturn {KEYS[1], ARGV[1]}\n")},
		}, `lua/a/s.lua:1: @include "s": an include cycle (a/s.lua -> a/s.lua)`},
		"an include outside lua/": {fstest.MapFS{
			"a/s.lua": {Data: []byte("-- s\n--- @include \"../../secrets/key\"\nreturn {KEYS[1], ARGV[1]}\n")},
		}, `lua/a/s.lua:2: @include "../../secrets/key": outside the Lua directory`},
		"an absolute include": {fstest.MapFS{
			"a/s.lua": {Data: []byte("--- @include \"/etc/passwd.lua\"\nreturn {KEYS[1], ARGV[1]}\n")},
		}, `lua/a/s.lua:1: @include "/etc/passwd.lua": an absolute path`},
		"a missing include": {fstest.MapFS{
			"a/s.lua": {Data: []byte("--- @include \"nope\"\nreturn {KEYS[1], ARGV[1]}\n")},
		}, `lua/a/s.lua:1: @include "nope": lua/a/nope.lua: file not found`},
		"an include with a shebang": {fstest.MapFS{
			"a/s.lua": {Data: []byte("--- @include \"h\"\nreturn {KEYS[1], ARGV[1]}\n")},
			"a/h.lua": {Data: []byte("#!lua flags=no-writes\nreturn 1\n")},
		}, `lua/a/s.lua:1: @include "h": lua/a/h.lua starts with a shebang`},
		"an include through a symlink": {fstest.MapFS{
			"a/s.lua": {Data: []byte("--- @include \"h\"\nreturn {KEYS[1], ARGV[1]}\n")},
			"a/h.lua": {Mode: fs.ModeSymlink, Data: []byte("/etc/hostname")},
		}, `lua/a/s.lua:1: @include "h": a/h.lua is a symbolic link`},
		"an include that is not Lua": {fstest.MapFS{
			"a/s.lua": {Data: []byte("--- @include \"notes.txt\"\nreturn {KEYS[1], ARGV[1]}\n")},
		}, `lua/a/s.lua:1: @include "notes.txt": not a .lua file`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := compiler.Load(specWithScript(t, false), tc.files, "lua")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
