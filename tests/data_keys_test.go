package tests

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/luatest"
)

const dataKeysDir = "testdata/datakeys"

// A key whose name a script reads from data (from: data) on a server started
// from the generated aclfile, as the application user: a parent's key under the
// user's prefix is reached, one outside it is refused by Redis itself (the
// ACL's "can't access at least one of the keys"), whatever the job's hash says.
func TestDataKeysUnderTheGeneratedACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, clients := featureServer(t, dataKeysDir, "q")
	src, err := os.ReadFile(dataKeysDir + "/lua/q/finish.lua")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := clients["q_loader"].ScriptLoad(ctx, string(src)).Result()
	if err != nil {
		t.Fatalf("SCRIPT LOAD as the loader: %v", err)
	}
	app, admin0 := clients["q"], srv.Client(0, admin)
	admin0.HSet(ctx, "q:jobs:2", "parent", "q:jobs:1")
	admin0.SAdd(ctx, "q:jobs:1:deps", "2", "3")
	if n, err := app.EvalSha(ctx, sha, []string{"q:jobs:2"}, 2).Int(); err != nil || n != 1 {
		t.Fatalf("finish: %d %v", n, err)
	}
	if m := admin0.SMembers(ctx, "q:jobs:1:deps").Val(); len(m) != 1 || m[0] != "3" {
		t.Fatalf("the parent's dependencies are %v, want [3]", m)
	}
	// A hash pointing outside the user's keys: the ACL refuses the SREM.
	admin0.HSet(ctx, "q:jobs:4", "parent", "billing:invoices:9")
	admin0.SAdd(ctx, "billing:invoices:9:deps", "4")
	if err := app.EvalSha(ctx, sha, []string{"q:jobs:4"}, 4).Err(); err == nil || !strings.Contains(err.Error(), "can't access at least one of the keys") {
		t.Fatalf("finish with a parent outside the ACL: %v, want the ACL's refusal", err)
	}
	if n := admin0.SCard(ctx, "billing:invoices:9:deps").Val(); n != 1 {
		t.Fatalf("the other application's set lost a member (%d left)", n)
	}
}

// Under the harness, a name read from data that matches none of the patterns
// the script may reach fails the test, naming the script, the Lua line and the
// key, though the ACL (the user's whole prefix) would let it through; a lock
// refreshed for 0 ms is kept without a TTL, which its ttl persist allows.
func TestDataKeysUnderTheHarness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spec, err := keyspec.Load(dataKeysDir + "/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS(dataKeysDir+"/lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	h := luatest.NewServer(nil)
	sc := h.ScripterFor(spec, srcs, "")
	sha := sc.ScriptLoad(ctx, string(srcs["finish"].Src)).Val()
	h.Do("HSET", "q:jobs:2", "parent", "q:jobs:1")
	h.Do("SADD", "q:jobs:1:deps", "2")
	if err := sc.EvalSha(ctx, sha, []string{"q:jobs:2"}, 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := sc.Check(); err != nil {
		t.Fatalf("a parent of the declared pattern: %v", err)
	}
	h.Do("HSET", "q:jobs:5", "parent", "q:board")
	if err := sc.EvalSha(ctx, sha, []string{"q:jobs:5"}, 5).Err(); err != nil {
		t.Fatal(err)
	}
	err = sc.Check()
	if err == nil || !strings.Contains(err.Error(), `script finish (lua/q/finish.lua:5) touched key "q:board:deps", which matches no pattern the script may reach`) {
		t.Fatalf("a parent outside the declared patterns: %v", err)
	}

	lock := luatest.NewServer(nil)
	lsc := lock.ScripterFor(spec, srcs, "")
	lsha := lsc.ScriptLoad(ctx, string(srcs["refresh"].Src)).Val()
	owner := strings.Repeat("a", 16)
	lock.Do("SET", "q:lock:x", owner, "PX", "60000")
	if n, err := lsc.EvalSha(ctx, lsha, []string{"q:lock:x"}, owner, 0).Int(); err != nil || n != 1 {
		t.Fatalf("refresh for 0 ms: %d %v", n, err)
	}
	if ttl, _ := lock.Do("PTTL", "q:lock:x"); ttl != int64(-1) {
		t.Fatalf("PTTL %v after a refresh for 0 ms, want -1", ttl)
	}
	if err := lsc.Check(); err != nil {
		t.Fatalf("a lock kept without a TTL, which ttl persist allows: %v", err)
	}
}
