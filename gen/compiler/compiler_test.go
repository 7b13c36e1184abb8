package compiler_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

func specWithScript(t *testing.T, read bool) *keyspec.Spec {
	t.Helper()
	src := `version: 1
instances:
  a:
    topology: standalone
    dbs:
      db0: {index: 0, url_env: A_URL, user: u}
users:
  u:
    instance: a
    select: {allow: false, reason: db0 only}
    key_prefixes: [{prefix: "t:", seed: test}]
keys:
  k:
    db: a.db0
    kind: cache
    pattern: "t:{id}"
    params: {id: {type: uuid}}
    value: [string]
    ttl: {rule: fixed, value: 1m}
scripts:
  s:
    instance: a
    kind: cache
    read_only: ` + map[bool]string{true: "true", false: "false"}[read] + `
    keys: [{name: k, one_of: [k]}]
    argv: [{name: v, type: string, max_bytes: 9}]
    reply: {type: int, name: n}
`
	spec, err := keyspec.Parse("keyspec.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestLoadErrorsNameThePlace(t *testing.T) {
	for name, tc := range map[string]struct {
		readOnly bool
		files    fstest.MapFS
		want     string
	}{
		"file missing":     {false, fstest.MapFS{}, `keyspec.yaml:21: script "s": lua/a/s.lua: file not found`},
		"not UTF-8":        {false, fstest.MapFS{"a/s.lua": {Data: []byte("return 1\n-- \xff\n")}}, `lua/a/s.lua:2: byte 0xff is not UTF-8`},
		"control char":     {false, fstest.MapFS{"a/s.lua": {Data: []byte("-- ok\nreturn 1\x00")}}, `lua/a/s.lua:2: control character U+0000`},
		"bidi override":    {false, fstest.MapFS{"a/s.lua": {Data: []byte("-- \u202e\nreturn 1")}}, `lua/a/s.lua:1: control character U+202E`},
		"too large":        {false, fstest.MapFS{"a/s.lua": {Data: []byte("return 1\n" + strings.Repeat("-- pad\n", compiler.MaxScriptBytes/7))}}, `keyspec.yaml:21: script "s": lua/a/s.lua: 65543 bytes, over luagen's cap of 65536`},
		"a FIFO-like file": {false, fstest.MapFS{"a/s.lua": {Mode: 0o644 | os.ModeNamedPipe}}, `keyspec.yaml:21: script "s": lua/a/s.lua: not a regular file`},
		"symlink":          {false, fstest.MapFS{"a/s.lua": {Mode: os.ModeSymlink, Data: []byte("/etc/hostname")}}, `keyspec.yaml:21: script "s": lua/a/s.lua: a/s.lua is a symbolic link`},
		"syntax error":     {false, fstest.MapFS{"a/s.lua": {Data: []byte("return (")}}, `lua/a/s.lua:1: at the end of the script: syntax error`},
		"goto":             {false, fstest.MapFS{"a/s.lua": {Data: []byte("local x = ARGV[1]\ngoto done\n::done::\nreturn redis.call('GET', KEYS[1])")}}, `lua/a/s.lua:2: goto is Lua 5.2`},
		"unknown script":   {false, fstest.MapFS{"a/s.lua": {Data: []byte("return {KEYS[1], ARGV[1]}")}, "a/extra.lua": {Data: []byte("return 1")}}, `lua/a/extra.lua:1: script "extra" is not declared in keyspec.yaml`},
		"KEYS beyond":      {false, fstest.MapFS{"a/s.lua": {Data: []byte("return {KEYS[1], KEYS[2], ARGV[1]}")}}, `lua/a/s.lua:1: reads KEYS[2], but script "s" declares 1 KEYS (keyspec.yaml:21)`},
		"ARGV unread":      {false, fstest.MapFS{"a/s.lua": {Data: []byte("return KEYS[1]")}}, `keyspec.yaml:26: script "s" ARGV[1] "v": lua/a/s.lua never reads it`},
		"RO no flag":       {true, fstest.MapFS{"a/s.lua": {Data: []byte("return {KEYS[1], ARGV[1]}")}}, `script "s": read_only, but lua/a/s.lua does not start with #!lua flags=no-writes`},
		"RO writes":        {true, fstest.MapFS{"a/s.lua": {Data: []byte("#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], ARGV[1])")}}, `lua/a/s.lua:2: script "s" is read_only but calls SET`},
		"RO publishes":     {true, fstest.MapFS{"a/s.lua": {Data: []byte("#!lua flags=no-writes\nredis.call('PUBLISH', 't:news', ARGV[1])\nreturn redis.call('GET', KEYS[1])")}}, `lua/a/s.lua:2: script "s" is read_only but calls PUBLISH`},
		"flag, not RO":     {false, fstest.MapFS{"a/s.lua": {Data: []byte("#!lua flags=no-writes\nreturn {KEYS[1], ARGV[1]}")}}, `lua/a/s.lua says flags=no-writes; declare read_only: true`},
		"bad shebang":      {false, fstest.MapFS{"a/s.lua": {Data: []byte("#!python\nreturn 1")}}, `lua/a/s.lua:1: shebang must be #!lua`},
		"redis aliased":    {false, fstest.MapFS{"a/s.lua": {Data: []byte("local r = redis\nreturn r.call('FLUSHALL', KEYS[1], ARGV[1])")}}, `lua/a/s.lua:1: redis used as a value: the static reading cannot follow it`},
		"loadstring":       {false, fstest.MapFS{"a/s.lua": {Data: []byte("local f = loadstring(ARGV[1])\nreturn f(KEYS[1])")}}, `lua/a/s.lua:1: loadstring: the static reading cannot follow it`},
		"ACL injection":    {false, fstest.MapFS{"a/s.lua": {Data: []byte("return redis.call(\"get\\nuser evil on nopass ~* +@all\", KEYS[1], ARGV[1])")}}, `lua/a/s.lua:1: redis.call("get\nuser evil on nopass ~* +@all", ...): Redis 7.0.15 has no such command`},
		"literal key":      {false, fstest.MapFS{"a/s.lua": {Data: []byte("redis.call('SET', 'app:api:forged', ARGV[1])\nreturn KEYS[1]")}}, `lua/a/s.lua:1: SET: argument 2 of redis.call is a key, and it is "app:api:forged", not taken from KEYS`},
		"undeclared error": {false, fstest.MapFS{"a/s.lua": {Data: []byte("if ARGV[1] == '' then return redis.error_reply('NOPE empty') end\nreturn KEYS[1]")}}, `lua/a/s.lua:1: error reply NOPE is not declared under script "s"'s errors`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := compiler.Load(specWithScript(t, tc.readOnly), tc.files, "lua")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			if !errors.Is(err, keyspec.ErrInvalid) {
				t.Errorf("error does not match keyspec.ErrInvalid")
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite testdata/bypass/*.want")

// Each testdata/bypass/NAME.lua is script s of testdata/bypass/keyspec.yaml with
// one way around the checks the generated code and ACL rest on; NAME.want is
// exactly what Load answers (empty: accepted). cmd/luagen's tests run the same
// fixtures through luagen generate and luagen acl.
func TestBypassesAreRefused(t *testing.T) {
	for _, dir := range []string{"testdata/bypass", "testdata/bypass_derived", "testdata/bypass_data"} {
		spec, err := keyspec.Load(filepath.Join(dir, "keyspec.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.lua"))
		if len(files) < 10 {
			t.Fatalf("%s: only %d fixtures", dir, len(files))
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".lua")
			t.Run(filepath.Base(dir)+"/"+name, func(t *testing.T) {
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				_, err = compiler.Load(spec, fstest.MapFS{"a/s.lua": {Data: src}}, "lua")
				got := ""
				if err != nil {
					got = err.Error() + "\n"
					if !errors.Is(err, keyspec.ErrInvalid) {
						t.Errorf("error does not match keyspec.ErrInvalid")
					}
				}
				wantPath := strings.TrimSuffix(f, ".lua") + ".want"
				if *update {
					if err := os.WriteFile(wantPath, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(wantPath)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Fatalf("Load:\n%s\nwant:\n%s", got, want)
				}
				if (name == "accepted") != (got == "") {
					t.Fatalf("only accepted.lua may load; %s: %q", name, got)
				}
			})
		}
	}
}

// The idiom scripts of gen/luascript/testdata/reading, checked against
// testdata/idioms/keyspec.yaml: each loads, and testdata/idioms/NAME.golden is
// its reading with what every key and channel argument resolved to.
func TestIdiomsResolve(t *testing.T) {
	spec, err := keyspec.Load("testdata/idioms/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := fstest.MapFS{}
	paths, _ := filepath.Glob("../luascript/testdata/reading/*.lua")
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files["q/"+filepath.Base(p)] = &fstest.MapFile{Data: src}
	}
	srcs, err := compiler.Load(spec, files, "lua")
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != len(paths) || len(paths) < 10 {
		t.Fatalf("%d scripts for %d idioms", len(srcs), len(paths))
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			got := src.Reading()
			golden := filepath.Join("testdata/idioms", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("reading:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
