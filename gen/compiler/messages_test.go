package compiler_test

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/compiler"
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
