package tests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
)

// rateScript runs one of the three rate-limit scripts on key with the same
// limit, window and cost (no jitter).
type rateScript struct {
	name string
	typ  string // the Redis type of its bucket
	run  func(t *testing.T, s *vm1.Scripts, key vm1.APIRLUserKey, limit, cost int64, window time.Duration, peek bool) (vm1.RateDecision, error)
}

var rateScripts = []rateScript{
	{"rate_limit_sliding", "zset", func(t *testing.T, s *vm1.Scripts, key vm1.APIRLUserKey, limit, cost int64, window time.Duration, peek bool) (vm1.RateDecision, error) {
		return s.RateLimitSliding(context.Background(), key, vm1.RateLimitSlidingArgs{Limit: limit, Window: window, Cost: cost, Peek: peek, Nonce: scripttest.Nonce(t)})
	}},
	{"rate_limit_fixed", "string", func(t *testing.T, s *vm1.Scripts, key vm1.APIRLUserKey, limit, cost int64, window time.Duration, peek bool) (vm1.RateDecision, error) {
		return s.RateLimitFixed(context.Background(), key, vm1.RateLimitFixedArgs{Limit: limit, Window: window, Cost: cost, Peek: peek})
	}},
	{"rate_limit_token_bucket", "hash", func(t *testing.T, s *vm1.Scripts, key vm1.APIRLUserKey, limit, cost int64, window time.Duration, peek bool) (vm1.RateDecision, error) {
		return s.RateLimitTokenBucket(context.Background(), key, vm1.RateLimitTokenBucketArgs{Limit: limit, Window: window, Cost: cost, Peek: peek})
	}},
}

// foreignBuckets are what another algorithm, or another writer, leaves on a
// rate-limit key: each script must treat every one of another type as empty.
var foreignBuckets = map[string][]any{
	"zset":           {"ZADD", "", "1", "old-1", "2", "old-2", "3", "old-3"},
	"string":         {"SET", "", "3"},
	"not a counter":  {"SET", "", "three"},
	"hash":           {"HSET", "", "base", "1", "tat", "999999999"},
	"old token hash": {"HSET", "", "base", "1", "tat", "999999999"}, // no limit and window: written before they were stored
}

// A bucket another algorithm left (a policy change while it lived) is of the
// wrong type for the script that meets it. Each script treats it as empty: a
// peek evaluates it so and writes nothing; a charge replaces it with its own
// bucket, with a TTL, and counts from zero, exactly up to the limit.
func TestHarnessRateLimitsReplaceForeignBuckets(t *testing.T) {
	t.Parallel()
	for _, rs := range rateScripts {
		for name, cmd := range foreignBuckets {
			if name == rs.typ || (name == "not a counter" && rs.typ != "string") || (name == "old token hash" && rs.typ != "hash") {
				continue // its own type: not foreign (the old token hash is checked by the token bucket only)
			}
			t.Run(rs.name+"/"+name, func(t *testing.T) {
				h, _, scripts := scripttest.VM1Harness(t)
				key, _ := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteProfileGet, 60)
				args := append([]any{cmd[0], key.String()}, cmd[2:]...)
				if _, err := h.Do(args...); err != nil {
					t.Fatal(err)
				}
				if _, err := h.Do("PEXPIRE", key.String(), 60000); err != nil {
					t.Fatal(err)
				}
				before := h.Keyspace()[key.String()]
				d, err := rs.run(t, scripts, key, 3, 1, time.Minute, true)
				if err != nil || !d.Allowed || d.Remaining != 2 {
					t.Fatalf("peek: %+v %v, want an empty bucket", d, err)
				}
				if diff := luatest.DiffKeyspaces(h.Keyspace(), luatest.Keyspace{key.String(): before}, 0); diff != "" {
					t.Fatalf("a peek wrote:\n%s", diff)
				}
				for i := 0; i < 3; i++ {
					d, err := rs.run(t, scripts, key, 3, 1, time.Minute, false)
					if err != nil || !d.Allowed || d.Remaining != int64(2-i) {
						t.Fatalf("request %d: %+v %v", i+1, d, err)
					}
				}
				if d, err := rs.run(t, scripts, key, 3, 1, time.Minute, false); err != nil || d.Allowed {
					t.Fatalf("fourth: %+v %v, want denied", d, err)
				}
				e := h.Keyspace()[key.String()]
				if e.Type != rs.typ || e.TTL <= 0 || e.TTL > time.Minute {
					t.Fatalf("the bucket is a %s with TTL %v, want a %s with the script's own TTL", e.Type, e.TTL, rs.typ)
				}
				if rs.typ == "hash" && (e.Hash["limit"] != "3" || e.Hash["window"] != "60000" || len(e.Hash) != 4) {
					t.Fatalf("the token bucket holds %v, want base, tat, limit and window only", e.Hash)
				}
			})
		}
	}
}

// Seed 000 §3 token bucket: the bucket stores the limit and window its tat is
// counted in (1/limit ms). After a policy change of the limit (the key, which
// holds the window but not the limit, stays the same) the old state is not
// misread under the new limit: the bucket starts full under the new one.
func TestHarnessTokenBucketLimitChangeIsAFreshBucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	key, _ := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 1)
	call := func(limit, cost int64, peek bool) vm1.RateDecision {
		t.Helper()
		d, err := scripts.RateLimitTokenBucket(ctx, key, vm1.RateLimitTokenBucketArgs{Limit: limit, Window: time.Second, Cost: cost, Peek: peek})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := call(4, 4, false); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("drain 4: %+v", d)
	}
	// Raised to 10: a misread tat of 4 tokens' time would leave only 6.
	if d := call(10, 1, true); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("peek under limit 10: %+v, want a full bucket", d)
	}
	for i := 0; i < 10; i++ {
		if d := call(10, 1, false); !d.Allowed || d.Remaining != int64(9-i) {
			t.Fatalf("request %d under limit 10: %+v", i+1, d)
		}
	}
	if d := call(10, 1, false); d.Allowed || d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("the 11th under limit 10: %+v, want 100 ms", d)
	}
	// Lowered to 2: a misread tat of 10 tokens' time would deny for 5 s.
	if d := call(2, 2, false); !d.Allowed || d.Remaining != 0 || !d.ResetAt.Equal(h.Clock().Now().Add(time.Second)) {
		t.Fatalf("under limit 2: %+v, want a full bucket", d)
	}
	if d := call(2, 1, false); d.Allowed || d.RetryAfter != 500*time.Millisecond {
		t.Fatalf("the third under limit 2: %+v, want 500 ms", d)
	}
	e := h.Keyspace()[key.String()]
	if e.Hash["limit"] != "2" || e.Hash["window"] != "1000" {
		t.Fatalf("the bucket holds %v", e.Hash)
	}
}

// The sliding window's cap of 10000 members holds in the script itself, for a
// caller that bypasses the generated wrapper (which refuses it first).
func TestHarnessSlidingWindowCapInTheScript(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := luatest.NewServer(luatest.NewClock(scripttest.T0))
	sc := h.Scripter()
	if err := sc.ScriptLoad(ctx, vm1.RateLimitSlidingScript.Source()).Err(); err != nil {
		t.Fatal(err)
	}
	key, _ := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 60)
	for name, argv := range map[string][]any{
		"limit": {10001, 60000, 0, 1, "0", "n"},
		"cost":  {10001, 60000, 0, 10001, "0", "n"},
	} {
		err := sc.EvalSha(ctx, vm1.RateLimitSlidingScript.SHA1(), []string{key.String()}, argv...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "BAD_ARG") {
			t.Errorf("%s 10001: %v, want BAD_ARG", name, err)
		}
	}
	if len(h.Keyspace()) != 0 {
		t.Fatal("a refused call wrote")
	}
	scripts, _ := vm1.NewScripts(vm1.Clients{DB0: sc})
	if _, err := scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{Limit: 10000, Window: time.Minute, Cost: 10001, Nonce: scripttest.Nonce(t)}); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Fatalf("the wrapper with cost 10001: %v", err)
	}
	if _, err := scripts.RateLimitSlidingRefund(ctx, key, vm1.RateLimitSlidingRefundArgs{Cost: 10001, Nonce: scripttest.Nonce(t)}); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Fatalf("the refund wrapper with cost 10001: %v", err)
	}
}

// The refund scripts give back exactly what one request took: the sliding
// window's members of that request's nonce, the fixed window's units within
// the same window only, and the token bucket's tat of that cost, never more than
// is still ahead of now, nor anything once the charge has refilled.
func TestHarnessRefundsGiveBackExactlyTheCharge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("sliding", func(t *testing.T) {
		h, _, scripts := scripttest.VM1Harness(t)
		key, _ := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 60)
		mine, theirs := scripttest.Nonce(t), scripttest.Nonce(t)
		charge := func(n string, cost int64) {
			if d, err := scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{Limit: 10, Window: time.Minute, Cost: cost, Nonce: n}); err != nil || !d.Allowed {
				t.Fatalf("charge: %+v %v", d, err)
			}
		}
		charge(theirs, 2)
		charge(mine, 3)
		ttl := h.Keyspace()[key.String()].TTL
		h.Clock().Advance(time.Second)
		if ok, err := scripts.RateLimitSlidingRefund(ctx, key, vm1.RateLimitSlidingRefundArgs{Cost: 3, Nonce: mine}); err != nil || !ok {
			t.Fatalf("refund: %v %v", ok, err)
		}
		e := h.Keyspace()[key.String()]
		if len(e.ZSet) != 2 || !strings.HasPrefix(e.ZSet[0].Member, theirs) || !strings.HasPrefix(e.ZSet[1].Member, theirs) {
			t.Fatalf("left %v, want the other request's 2 members", e.ZSet)
		}
		if e.TTL != ttl-time.Second {
			t.Fatalf("TTL %v, want the bucket's own (%v)", e.TTL, ttl-time.Second)
		}
		if ok, _ := scripts.RateLimitSlidingRefund(ctx, key, vm1.RateLimitSlidingRefundArgs{Cost: 3, Nonce: mine}); ok {
			t.Fatal("a second refund gave back again")
		}
	})
	t.Run("fixed", func(t *testing.T) {
		h, _, scripts := scripttest.VM1Harness(t)
		key, _ := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 10)
		charge := func(cost int64) vm1.RateDecision {
			d, err := scripts.RateLimitFixed(ctx, key, vm1.RateLimitFixedArgs{Limit: 10, Window: 10 * time.Second, Jitter: 500 * time.Millisecond, Cost: cost})
			if err != nil || !d.Allowed {
				t.Fatalf("charge: %+v %v", d, err)
			}
			return d
		}
		refund := func(cost int64, d vm1.RateDecision) bool {
			ok, err := scripts.RateLimitFixedRefund(ctx, key, vm1.RateLimitFixedRefundArgs{Cost: cost, Window: 10 * time.Second, ResetAt: d.ResetAt.UnixMilli()})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		charge(2)
		mine := charge(3)
		h.Clock().Advance(4 * time.Second)
		if !refund(3, mine) || h.Keyspace()[key.String()].String != "2" {
			t.Fatalf("refund within the window: %v", h.Keyspace()[key.String()])
		}
		if !refund(2, mine) {
			t.Fatal("the last units of the window")
		}
		if _, ok := h.Keyspace()[key.String()]; ok {
			t.Fatal("a counter back at 0 stayed: the window would not restart with the next request")
		}
		// A charge of a window that ended is not taken from the next window.
		old := charge(4)
		h.Clock().Advance(10*time.Second + 501*time.Millisecond)
		charge(1)
		if refund(4, old) || h.Keyspace()[key.String()].String != "1" {
			t.Fatalf("a refund into the next window: %v", h.Keyspace()[key.String()])
		}
	})
	t.Run("token bucket", func(t *testing.T) {
		h, _, scripts := scripttest.VM1Harness(t)
		key, _ := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 1)
		charge := func(cost int64) vm1.RateDecision {
			d, err := scripts.RateLimitTokenBucket(ctx, key, vm1.RateLimitTokenBucketArgs{Limit: 4, Window: time.Second, Cost: cost})
			if err != nil || !d.Allowed {
				t.Fatalf("charge: %+v %v", d, err)
			}
			return d
		}
		refund := func(limit, cost int64, d vm1.RateDecision) bool {
			ok, err := scripts.RateLimitTokenBucketRefund(ctx, key, vm1.RateLimitTokenBucketRefundArgs{Limit: limit, Window: time.Second, Cost: cost, ResetAt: d.ResetAt.UnixMilli()})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		peek := func() vm1.RateDecision {
			d, err := scripts.RateLimitTokenBucket(ctx, key, vm1.RateLimitTokenBucketArgs{Limit: 4, Window: time.Second, Cost: 1, Peek: true})
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		charge(1)
		mine := charge(2)
		if refund(5, 2, mine) {
			t.Fatal("a refund under another limit gave back")
		}
		if !refund(4, 2, mine) {
			t.Fatal("refund")
		}
		if d := peek(); d.Remaining != 2 || !d.ResetAt.Equal(h.Clock().Now().Add(500*time.Millisecond)) {
			t.Fatalf("after the refund: %+v, want one token taken", d)
		}
		// A refund never fills the bucket beyond full: the charge refilled meanwhile.
		mine = charge(1) // 2 tokens taken: full again at +500 ms
		h.Clock().Advance(400 * time.Millisecond)
		if !refund(4, 1, mine) {
			t.Fatal("a partly refilled charge")
		}
		if _, ok := h.Keyspace()[key.String()]; ok {
			t.Fatalf("a full bucket stayed: %v", h.Keyspace()[key.String()])
		}
		// Once its reset_at has passed, the charge has refilled: the tat is
		// later requests', not given back.
		old := charge(2)
		h.Clock().Advance(501 * time.Millisecond)
		charge(2)
		if refund(4, 2, old) {
			t.Fatal("a refilled charge was given back from later requests")
		}
		if d := peek(); d.Remaining != 1 {
			t.Fatalf("after a refused refund: %+v", d)
		}
	})
}
