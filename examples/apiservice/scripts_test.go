package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hanchat/luagen/examples/apiservice/internal/redisgen/api"
	"github.com/hanchat/luagen/luatest"
)

// harness runs the generated wrappers on luatest's in-memory Redis with a
// clock the test moves; every script run is checked for keys written without
// a TTL or outside the spec when the test ends.
func harness(t *testing.T) (*api.Scripts, *luatest.Server) {
	t.Helper()
	h := luatest.NewServer(luatest.NewClock(time.Unix(1_800_000_000, 0)))
	sc := h.Scripter()
	scripts, err := api.NewScripts(api.Clients{DB0: sc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sc.Check(); err != nil {
			t.Errorf("a script broke a rule: %v", err)
		}
	})
	return scripts, h
}

func ttl(t *testing.T, h *luatest.Server, key string) time.Duration {
	t.Helper()
	e, ok := h.Keyspace()[key]
	if !ok {
		t.Fatalf("no key %s", key)
	}
	return e.TTL
}

// GCRA on a clock the test moves: 10 requests a second (one every 100 ms),
// 3 at once. The burst passes, the next request waits exactly one interval,
// and the key lives exactly until the burst is whole again.
func TestRateLimitIsExact(t *testing.T) {
	ctx := context.Background()
	s, h := harness(t)
	key, err := api.NewRateKey("client-1")
	if err != nil {
		t.Fatal(err)
	}
	args := api.RateLimitArgs{Limit: 10, Period: time.Second, Burst: 3, Cost: 1}
	for i, want := range []int64{2, 1, 0} {
		d, err := s.RateLimit(ctx, key, args)
		if err != nil || !d.Allowed || d.Remaining != want || d.RetryAfter != 0 || d.ResetAfter != time.Duration(i+1)*100*time.Millisecond {
			t.Fatalf("request %d: %+v %v", i+1, d, err)
		}
	}
	if got := ttl(t, h, key.String()); got != 300*time.Millisecond {
		t.Fatalf("key TTL %v, want 300ms: the time until the burst is whole", got)
	}
	d, err := s.RateLimit(ctx, key, args)
	if err != nil || d.Allowed || d.Remaining != 0 || d.RetryAfter != 100*time.Millisecond || d.ResetAfter != 300*time.Millisecond {
		t.Fatalf("request over the burst: %+v %v", d, err)
	}
	h.Clock().Advance(99 * time.Millisecond)
	if d, _ := s.RateLimit(ctx, key, args); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("1 ms early: %+v", d)
	}
	h.Clock().Advance(time.Millisecond)
	if d, _ := s.RateLimit(ctx, key, args); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("one interval later: %+v", d)
	}
	// A quiet spell longer than the burst restores all of it, and a cost of
	// 3 takes it at once.
	h.Clock().Advance(time.Second)
	if d, _ := s.RateLimit(ctx, key, api.RateLimitArgs{Limit: 10, Period: time.Second, Burst: 3, Cost: 3}); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after a quiet second, a cost of 3: %+v", d)
	}
	for name, bad := range map[string]api.RateLimitArgs{
		"burst above limit": {Limit: 2, Period: time.Second, Burst: 3, Cost: 1},
		"cost above burst":  {Limit: 10, Period: time.Second, Burst: 3, Cost: 4},
	} {
		if _, err := s.RateLimit(ctx, key, bad); !errors.Is(err, api.ErrBadArg) {
			t.Errorf("%s: %v, want ErrBadArg", name, err)
		}
	}
}

// An idempotency key runs one request: a retry finds it running, then done
// with the response stored; only its owner stores a response; a request that
// never finishes frees the key when its lease ends.
func TestIdempotencyKey(t *testing.T) {
	ctx := context.Background()
	s, h := harness(t)
	key, err := api.NewIdempotencyKey("client-1", "8d3f0c8e-order-42")
	if err != nil {
		t.Fatal(err)
	}
	first, second := "owner-token-aaaaaaaaaa", "owner-token-bbbbbbbbbb"
	begin := func(owner string) api.IdemBeginResult {
		t.Helper()
		r, err := s.IdemBegin(ctx, key, api.IdemBeginArgs{Owner: owner, Lease: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := begin(first); r.State != api.IdemStateStarted {
		t.Fatalf("first request: %+v", r)
	}
	if got := ttl(t, h, key.String()); got != 30*time.Second {
		t.Fatalf("a running request holds the key %v, want its lease", got)
	}
	if r := begin(second); r.State != api.IdemStateRunning {
		t.Fatalf("a retry while it runs: %+v", r)
	}
	if _, err := s.IdemFinish(ctx, key, api.IdemFinishArgs{Owner: second, Status: 201, Body: []byte("{}"), Retention: time.Hour}); !errors.Is(err, api.ErrNotOwner) {
		t.Fatalf("a response stored by another request: %v, want ErrNotOwner", err)
	}
	if ok, err := s.IdemFinish(ctx, key, api.IdemFinishArgs{Owner: first, Status: 201, Body: []byte(`{"order":1}`), Retention: time.Hour}); err != nil || !ok {
		t.Fatalf("the owner's response: %v %v", ok, err)
	}
	if r := begin(second); r.State != api.IdemStateDone || r.Status != 201 || string(r.Body) != `{"order":1}` {
		t.Fatalf("a retry after it finished: %+v", r)
	}
	if got := ttl(t, h, key.String()); got != time.Hour {
		t.Fatalf("the response is kept %v, want the retention", got)
	}

	abandoned, _ := api.NewIdempotencyKey("client-1", "never-finished")
	if r, err := s.IdemBegin(ctx, abandoned, api.IdemBeginArgs{Owner: first, Lease: time.Second}); err != nil || r.State != api.IdemStateStarted {
		t.Fatalf("%+v %v", r, err)
	}
	h.Clock().Advance(time.Second + time.Millisecond)
	if r, err := s.IdemBegin(ctx, abandoned, api.IdemBeginArgs{Owner: second, Lease: time.Second}); err != nil || r.State != api.IdemStateStarted {
		t.Fatalf("after the lease of a request that never finished: %+v %v", r, err)
	}
}

// A lock is its owner's until the lease ends; only the owner releases it.
func TestLock(t *testing.T) {
	ctx := context.Background()
	s, h := harness(t)
	key, err := api.NewLockKey("orders.client-1")
	if err != nil {
		t.Fatal(err)
	}
	a, b := "lock-owner-aaaaaaaaaaa", "lock-owner-bbbbbbbbbbb"
	acquire := func(owner string) bool {
		t.Helper()
		ok, err := s.LockAcquire(ctx, key, api.LockAcquireArgs{Owner: owner, Lease: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	release := func(owner string) bool {
		t.Helper()
		ok, err := s.LockRelease(ctx, key, api.LockReleaseArgs{Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !acquire(a) || acquire(b) {
		t.Fatal("want a to hold the lock and b refused")
	}
	if release(b) {
		t.Fatal("b released a's lock")
	}
	if !release(a) || !acquire(b) {
		t.Fatal("a's release did not free the lock for b")
	}
	h.Clock().Advance(10*time.Second + time.Millisecond)
	if !acquire(a) {
		t.Fatal("b's lease ended, and the lock is still b's")
	}
	if release(b) {
		t.Fatal("b, whose lease ended, released a's lock")
	}
	if _, err := api.NewLockKey("orders:*"); err == nil {
		t.Fatal("a resource name with ':' and '*' built a key")
	}
}
