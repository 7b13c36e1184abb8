package compiler_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// Issue 25's Lua messages, each line exactly: a syntax error is file:line:
// message with the line once (gopher-lua's own text, "line:4(column:7) near
// 'end':   syntax error", repeated it), and a file no entry declares is named
// at its line 1 with where and how to declare it.
func TestMessagesOfIssue25(t *testing.T) {
	for name, tc := range map[string]struct {
		files fstest.MapFS
		want  string
	}{
		"syntax error": {fstest.MapFS{"a/s.lua": {Data: []byte("local x = KEYS[1]\nif x then\n  return ARGV[1]\nend end\n")}},
			`lua/a/s.lua:4: syntax error near "end" (column 7)`},
		"syntax error at the end": {fstest.MapFS{"a/s.lua": {Data: []byte("local x = KEYS[1]\nif x then\n  return ARGV[1]\n")}},
			`lua/a/s.lua:4: at the end of the script: syntax error (a block, string or bracket left open?)`},
		"unterminated string": {fstest.MapFS{"a/s.lua": {Data: []byte("local x = KEYS[1]\nlocal s = 'abc\nreturn ARGV[1]\n")}},
			`lua/a/s.lua:2: unterminated string near "abc"`},
		"undeclared script": {fstest.MapFS{"a/s.lua": {Data: []byte("return {KEYS[1], ARGV[1]}")}, "a/release.lua": {Data: []byte("return 1")}},
			`lua/a/release.lua:1: script "release" is not declared in keyspec.yaml: declare it under scripts: (keyspec.yaml:20) as an entry a.release (or release with instance: a) with its keys, argv and reply (docs/keyspec.md, Scripts), or remove the file`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := compiler.Load(specWithScript(t, false), tc.files, "lua")
			if err == nil {
				t.Fatal("loaded without error")
			}
			if lines := strings.Split(err.Error(), "\n"); !slices.Contains(lines, tc.want) {
				t.Errorf("errors:\n%s\nwant the line:\n%s", err, tc.want)
			}
		})
	}
}

// An argument that fills a placeholder it does not fit is told what to write:
// an int ARGV wider than an int placeholder gets the placeholder's range
// (issue 20's import try: the message said only "a type every value of which
// {id} accepts").
func TestArgFillingAPlaceholderSaysWhatToDeclare(t *testing.T) {
	src, err := os.ReadFile("testdata/bypass_derived/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lua := fstest.MapFS{"a/s.lua": {Data: []byte("redis.call('HSET', KEYS[1], 'owner', ARGV[1])\nredis.call('SET', KEYS[1] .. ':lock', ARGV[1], 'PX', 60000)\nreturn redis.call('PUBLISH', 'ev:job:' .. ARGV[2], 'x')\n")}}
	for name, tc := range map[string]struct{ argv, want string }{
		"int too wide": {`{name: note, type: int}`,
			`ARGV[2] "note" (int) fills {id}, a int (1..1000000) placeholder: ARGV[2] allows -9007199254740991..9007199254740991: give it min: 1 and max: 1000000 (or narrower)`},
		"int within": {`{name: note, type: int, min: 1, max: 5000}`, ``},
		"string": {`{name: note, type: string, max_bytes: 64}`,
			`ARGV[2] "note" (string) fills {id}, a int (1..1000000) placeholder: declare ARGV[2] with a type every value of which {id} accepts`},
	} {
		t.Run(name, func(t *testing.T) {
			text := strings.Replace(string(src), "{name: note, type: string, max_bytes: 64}", tc.argv, 1)
			spec, err := keyspec.Parse("keyspec.yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			_, err = compiler.Load(spec, lua, "lua")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
