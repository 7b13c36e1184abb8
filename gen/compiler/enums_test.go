package compiler_test

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// An ARGV of type enum is each of its values where the script builds a key
// name or names a command with it, and nothing else: a value that makes an
// undeclared name, a value that is a command no ACL grants, an ARGV of
// another type as a command, and a loop over ARGV of mixed types are refused
// (gen/testdata/features/enumargs is the accepted case).
func TestEnumArgsAreEachValue(t *testing.T) {
	base, err := os.ReadFile("../testdata/features/enumargs/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	counts, _ := os.ReadFile("../testdata/features/enumargs/lua/jobs/counts.lua")
	push, _ := os.ReadFile("../testdata/features/enumargs/lua/jobs/push.lua")
	for _, c := range []struct {
		name         string
		spec         [2]string // an edit of the spec
		counts, push string
		want         string // "" accepted
	}{
		{name: "accepted", counts: string(counts), push: string(push)},
		{name: "a value making an undeclared name", counts: "local out = {}\nfor i = 1, #ARGV do\n  out[#out + 1] = tostring(redis.call('LLEN', KEYS[1] .. ARGV[i] .. ':x'))\nend\nreturn out\n", push: string(push),
			want: `which may be KEYS[1] .. "wait:x", built from KEYS[1] "queue"`},
		{name: "a value that is a command no ACL grants", spec: [2]string{"values: [RPUSH, LPUSH]", "values: [RPUSH, FLUSHALL]"}, counts: string(counts), push: string(push),
			want: "lua/jobs/push.lua:3: FLUSHALL"},
		{name: "a command from an ARGV of another type", counts: string(counts), push: "return redis.call(ARGV[2], KEYS[1], ARGV[1])\n",
			want: "lua/jobs/push.lua:1: redis.call with a command that is not a string literal"},
		{name: "a loop over ARGV of two types", counts: string(counts), push: "for i = 1, #ARGV do redis.call('RPUSH', KEYS[1] .. ARGV[i], 'x') end\nreturn redis.call(ARGV[1], KEYS[1], ARGV[2])\n",
			want: "lua/jobs/push.lua:1: RPUSH: argument 2 of redis.call is a key, and it is KEYS[1] .. ARGV[i]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := string(base)
			if c.spec[0] != "" {
				src = strings.Replace(src, c.spec[0], c.spec[1], 1)
			}
			spec, err := keyspec.Parse("keyspec.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = compiler.Load(spec, fstest.MapFS{"jobs/counts.lua": {Data: []byte(c.counts)}, "jobs/push.lua": {Data: []byte(c.push)}}, "lua")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
