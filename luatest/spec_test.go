package luatest_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/luatest"
)

// specScripter is testdata/spec's job queue on a Scripter that checks its
// runs against the spec, the script loaded as a generated wrapper would.
func specScripter(t *testing.T) (*luatest.Server, *luatest.Scripter, string) {
	t.Helper()
	spec, err := keyspec.Load("testdata/spec/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("testdata/spec/lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	h := luatest.NewServer(nil)
	sc := h.ScripterFor(spec, srcs, "")
	sha, err := sc.ScriptLoad(context.Background(), string(srcs["take"].Src)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return h, sc, sha
}

func take(t *testing.T, h *luatest.Server, sc *luatest.Scripter, sha, id string) *luatest.Result {
	t.Helper()
	if _, err := h.Do("LPUSH", "q:a:wait", id); err != nil {
		t.Fatal(err)
	}
	before := len(sc.Results())
	sc.EvalSha(context.Background(), sha, []string{"q:a:wait", "q:a:events"}, "q:a:job:")
	rs := sc.Results()
	if len(rs) != before+1 {
		t.Fatalf("%d runs recorded, want %d", len(rs), before+1)
	}
	return rs[len(rs)-1]
}

// A run that keeps the spec breaks no rule: the job key it built from the
// prefix and the popped id matches the derived pattern, it has its TTL, the
// channel is the declared one, and the stream declared ttl: none keeps no TTL
// (which the default rules, every written key expires, would refuse).
func TestScripterForAcceptsARunThatKeepsTheSpec(t *testing.T) {
	h, sc, sha := specScripter(t)
	r := take(t, h, sc, sha, "5")
	if r.Err != nil || r.Reply != "5" {
		t.Fatalf("take: %v %v", r.Reply, r.Err)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	if len(r.Published) != 1 || r.Published[0].Channel != "ev:job:5" {
		t.Fatalf("published %+v", r.Published)
	}
	plain := luatest.NewServer(nil)
	src, _ := os.ReadFile("testdata/spec/lua/q/take.lua")
	s, err := luatest.Load("lua/q/take.lua", src)
	if err != nil {
		t.Fatal(err)
	}
	plain.Do("LPUSH", "q:a:wait", "5")
	def := plain.Run(s, []string{"q:a:wait", "q:a:events"}, "q:a:job:")
	if err := def.Check(); err == nil || !strings.Contains(err.Error(), `key "q:a:events" written without a TTL`) || !strings.Contains(err.Error(), `touched key "q:a:job:5" not passed in KEYS`) {
		t.Fatalf("the default rules: %v", err)
	}
}

// What the reading let through and the run did not keep fails the test,
// naming the script, the file and Lua line, and the key or channel.
func TestScripterForFailsWhatTheRunBreaks(t *testing.T) {
	for name, tc := range map[string]struct {
		id   string
		runs int
		want []string
	}{
		"no TTL on a key declared with one": {"13", 1, []string{
			`script take (lua/q/take.lua:4) left key "q:a:job:13" (key job, ttl fixed) without a TTL`}},
		"a TTL above the key's, named at the PEXPIRE that set it": {"21", 1, []string{
			`script take (lua/q/take.lua:8) left key "q:a:job:21" (key job, ttl fixed) with a TTL of 2h0m0s, above the 1h0m0s its spec allows`}},
		"an id that is no value of its placeholder": {"x1", 1, []string{
			`script take (lua/q/take.lua:4) touched key "q:a:job:x1", which matches no pattern the script may reach (events (q:{queue}:events), job (q:{queue}:job:{id}), jobs (q:{queue}:job:), wait (q:{queue}:wait))`,
			`script take (lua/q/take.lua:11) published to channel "ev:job:x1", which matches no channel the script may reach (job_events (ev:job:{id}))`}},
		"a stream past its bound": {"7", 4, []string{
			`script take (lua/q/take.lua:10) left key "q:a:events" (key events, max_len 3) with 4 elements`}},
	} {
		t.Run(name, func(t *testing.T) {
			h, sc, sha := specScripter(t)
			var r *luatest.Result
			for i := 0; i < tc.runs; i++ {
				r = take(t, h, sc, sha, tc.id)
				if i < tc.runs-1 {
					if err := r.Check(); err != nil {
						t.Fatalf("run %d: %v", i+1, err)
					}
				}
			}
			err := r.Check()
			if err == nil {
				t.Fatal("no violation")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("violations:\n%v\nwant one containing:\n%s", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "luatest: lua/q/take.lua broke") {
				t.Errorf("the error names %q, not the script's file", err)
			}
			if sc.Check() == nil {
				t.Error("Scripter.Check misses it")
			}
		})
	}
}
