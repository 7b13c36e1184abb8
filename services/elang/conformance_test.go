package elang_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/services/secrets"
)

// Every elang script in one scenario on a real redis-server and on the
// harness: equal replies (error texts included), an equal keyspace, and on
// Redis every key under the prefix, declared and with a TTL.
func TestElangScriptsConformToRedis(t *testing.T) {
	ctx := scripttest.Context(t)
	srv := redistest.Start(t)
	real := srv.Client(elang.DB0)
	p, _ := testPrefix("conform:")
	realScripts, err := elang.NewScripts(elang.Clients{DB0: real}, elang.WithPrefix(p))
	if err != nil {
		t.Fatal(err)
	}
	h := luatest.NewServer(luatest.NewClock(scripttest.T0))
	sc := h.Scripter()
	harnessScripts, err := elang.NewScripts(elang.Clients{DB0: sc}, elang.WithPrefix(p))
	if err != nil {
		t.Fatal(err)
	}

	entry, _ := elang.NewElangCacheKey(p, "catalog.version")
	gone, _ := elang.NewElangCacheKey(p, "gone")
	lock, _ := elang.NewElangLockKey(p, "report:42")
	hk, _ := secrets.NewHMACKey([]byte("elang-test-secret-0123456789abcdef"))
	id := hk.Sum(strings.Repeat("5a", 32))
	data, _ := elang.NewElangSessionDataKey(p, id)
	slock, _ := elang.NewElangSessionLockKey(p, id)
	fixedKey, _ := elang.NewElangRLKey(p, "api", hk.Sum("alice"), 60)
	slidingKey, _ := elang.NewElangRLKey(p, "login", hk.Sum("alice"), 60)

	type step struct {
		name string
		run  func(s *elang.Scripts) (any, error)
	}
	open := func(owner string) func(s *elang.Scripts) (any, error) {
		return func(s *elang.Scripts) (any, error) {
			return s.ElangSessionOpen(ctx, data, slock, elang.ElangSessionOpenArgs{Owner: owner})
		}
	}
	save := func(owner string, version int64, body string) func(s *elang.Scripts) (any, error) {
		return func(s *elang.Scripts) (any, error) {
			return s.ElangSessionSave(ctx, data, slock, elang.ElangSessionSaveArgs{Owner: owner, Version: version, Subject: "user-7", Body: []byte(body)})
		}
	}
	gen, _ := elang.NewElangCacheGenerationKey(p)
	set := func(k elang.ElangCacheKey, v string, ttl time.Duration, fresh string) func(s *elang.Scripts) (any, error) {
		return func(s *elang.Scripts) (any, error) {
			return s.ElangCacheSet(ctx, k, gen, elang.ElangCacheSetArgs{Value: []byte(v), TTL: ttl, Fresh: fresh})
		}
	}
	get := func(k elang.ElangCacheKey) func(s *elang.Scripts) (any, error) {
		return func(s *elang.Scripts) (any, error) { return s.ElangCacheGet(ctx, k, gen) }
	}
	steps := []step{
		{"cache get before any generation", get(entry)},
		{"cache set", set(entry, "4", 300*time.Second, "generation-00000000000001")},
		{"cache get", get(entry)},
		{"cache get missing", get(gone)},
		{"cache set other", set(gone, "x", time.Minute, "generation-00000000000009")},
		{"cache clear", func(s *elang.Scripts) (any, error) {
			return s.ElangCacheClear(ctx, gen, elang.ElangCacheClearArgs{Fresh: "generation-00000000000002"})
		}},
		{"cache get after the clear", get(entry)},
		{"cache set after the clear", set(entry, "5", 300*time.Second, "generation-00000000000009")},
		{"cache get the new entry", get(entry)},
		{"cache delete", func(s *elang.Scripts) (any, error) { return s.ElangCacheDelete(ctx, gone) }},
		{"cache delete again", func(s *elang.Scripts) (any, error) { return s.ElangCacheDelete(ctx, gone) }},
		{"lock acquire A", func(s *elang.Scripts) (any, error) {
			return s.ElangLockAcquire(ctx, lock, elang.ElangLockAcquireArgs{Owner: ownerA, Lease: 30 * time.Second})
		}},
		{"lock acquire B", func(s *elang.Scripts) (any, error) {
			return s.ElangLockAcquire(ctx, lock, elang.ElangLockAcquireArgs{Owner: ownerB, Lease: 30 * time.Second})
		}},
		{"lock refresh B", func(s *elang.Scripts) (any, error) {
			return s.ElangLockRefresh(ctx, lock, elang.ElangLockRefreshArgs{Owner: ownerB, Lease: 30 * time.Second})
		}},
		{"lock release B", func(s *elang.Scripts) (any, error) {
			return s.ElangLockRelease(ctx, lock, elang.ElangLockReleaseArgs{Owner: ownerB})
		}},
		{"lock refresh A", func(s *elang.Scripts) (any, error) {
			return s.ElangLockRefresh(ctx, lock, elang.ElangLockRefreshArgs{Owner: ownerA, Lease: 20 * time.Second})
		}},
		{"session open new", open(ownerA)},
		{"session create", save(ownerA, 0, "cart=1")},
		{"session open B locked", open(ownerB)},
		{"session save B locked", save(ownerB, 1, "cart=b")},
		{"session release A", func(s *elang.Scripts) (any, error) {
			return s.ElangLockRelease(ctx, slock, elang.ElangLockReleaseArgs{Owner: ownerA})
		}},
		{"session open B", open(ownerB)},
		{"session save B", save(ownerB, 1, "cart=2")},
		{"session save A stale", save(ownerA, 1, "cart=stale")},
		{"session create over existing", save(ownerA, 0, "cart=new")},
		{"rl fixed 1", fixed(ctx, fixedKey)},
		{"rl fixed 2", fixed(ctx, fixedKey)},
		{"rl fixed denied", fixed(ctx, fixedKey)},
		{"rl sliding 1", sliding(ctx, slidingKey, "nonce-000000000001")},
		{"rl sliding 2", sliding(ctx, slidingKey, "nonce-000000000002")},
		{"rl sliding denied", sliding(ctx, slidingKey, "nonce-000000000003")},
	}
	var lag scripttest.Lag
	for _, st := range steps {
		lag.Sync(t, h, real)
		want, wantErr := st.run(realScripts)
		slack := lag.Step()
		got, gotErr := st.run(harnessScripts)
		if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
			t.Errorf("%s: error: Redis %v, harness %v", st.name, wantErr, gotErr)
		}
		if diff := cmp.Diff(want, got, scripttest.Within(slack)); diff != "" {
			t.Errorf("%s: Redis (-) vs harness (+):\n%s", st.name, diff)
		}
	}
	scripttest.CompareKeyspaces(t, ctx, real, h, nil, lag.Max())
	if err := sc.Check(); err != nil {
		t.Errorf("harness rules: %v", err)
	}

	// Every key on Redis: under the prefix, declared, with a TTL.
	for _, k := range real.Keys(ctx, "*").Val() {
		rel, ok := strings.CutPrefix(k, p.String())
		declared := false
		for _, info := range elang.Keys {
			declared = declared || info.Matches(rel)
		}
		if !ok || !declared {
			t.Errorf("key %s is outside the prefix or matches no declared pattern", k)
		}
		if ttl := real.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("key %s has no TTL (%v)", k, ttl)
		}
	}
}

func fixed(ctx context.Context, k elang.ElangRLKey) func(s *elang.Scripts) (any, error) {
	return func(s *elang.Scripts) (any, error) {
		return s.ElangRateLimitFixed(ctx, k, elang.ElangRateLimitFixedArgs{Limit: 2, Window: time.Minute, Jitter: time.Second, Cost: 1})
	}
}

func sliding(ctx context.Context, k elang.ElangRLKey, nonce string) func(s *elang.Scripts) (any, error) {
	return func(s *elang.Scripts) (any, error) {
		return s.ElangRateLimitSliding(ctx, k, elang.ElangRateLimitSlidingArgs{Limit: 2, Window: time.Minute, Jitter: time.Second, Cost: 1, Nonce: nonce})
	}
}
