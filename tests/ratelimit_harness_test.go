package tests

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/scripttest"
)

// Fixed window through the generated wrapper on the harness: the counter's TTL
// is window + jitter from its first request, Retry-After is PTTL + 1 ms to the
// millisecond, a peek writes nothing, and a counter found without expiry (left
// by an older writer) gets one.
func TestHarnessFixedWindowExactRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	key, _ := vm1.NewAPIRLDialogKey(uuid.NewString(), 2)
	call := func(cost int64, peek bool) vm1.RateDecision {
		t.Helper()
		d, err := scripts.RateLimitFixed(ctx, key, vm1.RateLimitFixedArgs{Limit: 5, Window: 2 * time.Second, Jitter: 300 * time.Millisecond, Cost: cost, Peek: peek})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	clock := h.Clock()
	if d := call(5, true); !d.Allowed || d.Remaining != 0 || !d.ResetAt.Equal(scripttest.T0.Add(2301*time.Millisecond)) {
		t.Fatalf("peek on an empty window: %+v", d)
	}
	if len(h.Keyspace()) != 0 {
		t.Fatal("a peek wrote")
	}
	if d := call(4, false); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("cost 4: %+v", d)
	}
	if ttl := h.Keyspace()[key.String()].TTL; ttl != 2300*time.Millisecond {
		t.Fatalf("counter TTL %v, want window + jitter", ttl)
	}
	clock.Advance(1234 * time.Millisecond)
	if d := call(2, false); d.Allowed || d.Remaining != 1 || d.RetryAfter != 1067*time.Millisecond || !d.ResetAt.Equal(scripttest.T0.Add(2301*time.Millisecond)) {
		t.Fatalf("cost 2 over the limit: %+v", d)
	}
	if d := call(1, false); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("cost 1 fits: %+v", d)
	}
	if ttl := h.Keyspace()[key.String()].TTL; ttl != 1066*time.Millisecond {
		t.Fatalf("a later request moved the window's end: TTL %v", ttl)
	}
	clock.Advance(1066 * time.Millisecond)
	if d := call(1, true); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("at the expiry: %+v", d)
	}
	clock.Advance(time.Millisecond)
	if d := call(1, true); !d.Allowed || d.Remaining != 4 {
		t.Fatalf("after the expiry: %+v", d)
	}

	// A counter without expiry never resets; the script gives it one.
	stale, _ := vm1.NewAPIRLDialogKey(uuid.NewString(), 2)
	if _, err := h.Do("SET", stale.String(), "5"); err != nil {
		t.Fatal(err)
	}
	d, err := scripts.RateLimitFixed(ctx, stale, vm1.RateLimitFixedArgs{Limit: 5, Window: 2 * time.Second, Cost: 1})
	if err != nil || d.Allowed || d.RetryAfter != 2001*time.Millisecond {
		t.Fatalf("a counter without expiry: %+v %v", d, err)
	}
	if ttl := h.Keyspace()[stale.String()].TTL; ttl != 2*time.Second {
		t.Fatalf("the stale counter's TTL is %v, want the window", ttl)
	}
}

// Token bucket (GCRA) through the generated wrapper on the harness: partial
// refills are exact to the millisecond with a rate that does not divide the
// window (3 per second: one token every 333.33 ms).
func TestHarnessTokenBucketExactRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	key, _ := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 1)
	call := func(cost int64, peek bool) vm1.RateDecision {
		t.Helper()
		d, err := scripts.RateLimitTokenBucket(ctx, key, vm1.RateLimitTokenBucketArgs{Limit: 3, Window: time.Second, Jitter: 100 * time.Millisecond, Cost: cost, Peek: peek})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	clock := h.Clock()
	if d := call(3, false); !d.Allowed || d.Remaining != 0 || !d.ResetAt.Equal(scripttest.T0.Add(time.Second)) {
		t.Fatalf("burst: %+v", d)
	}
	if ttl := h.Keyspace()[key.String()].TTL; ttl != 1100*time.Millisecond {
		t.Fatalf("bucket TTL %v, want refill time + jitter", ttl)
	}
	// One token is back after 1000/3 ms, i.e. on the 334th millisecond.
	if d := call(1, false); d.Allowed || d.RetryAfter != 334*time.Millisecond {
		t.Fatalf("one more: %+v", d)
	}
	if d := call(2, true); d.Allowed || d.RetryAfter != 667*time.Millisecond {
		t.Fatalf("two more: %+v", d)
	}
	clock.Advance(333 * time.Millisecond)
	if d := call(1, true); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("on the 333rd ms: %+v", d)
	}
	clock.Advance(time.Millisecond)
	if d := call(1, false); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("on the 334th ms: %+v", d)
	}
	// Two more tokens take 666.67 ms, less the 2/3 ms the last request waited
	// beyond its token: exactly 666 ms (the remainder is carried over).
	if d := call(2, true); d.Allowed || d.RetryAfter != 666*time.Millisecond {
		t.Fatalf("two right away: %+v", d)
	}
	clock.Advance(665 * time.Millisecond)
	if d := call(2, true); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("1 ms early for two: %+v", d)
	}
	clock.Advance(time.Millisecond)
	if d := call(2, false); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("two on time: %+v", d)
	}
}

// A cost above the limit can never be allowed: every algorithm answers BAD_ARG,
// and nothing is written.
func TestHarnessRateLimitsRefuseCostAboveLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	key, _ := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 60)
	if _, err := scripts.RateLimitFixed(ctx, key, vm1.RateLimitFixedArgs{Limit: 2, Window: time.Minute, Cost: 3}); !errors.Is(err, vm1.ErrBadArg) {
		t.Errorf("fixed: %v", err)
	}
	if _, err := scripts.RateLimitTokenBucket(ctx, key, vm1.RateLimitTokenBucketArgs{Limit: 2, Window: time.Minute, Cost: 3}); !errors.Is(err, vm1.ErrBadArg) {
		t.Errorf("token bucket: %v", err)
	}
	if _, err := scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{Limit: 2, Window: time.Minute, Cost: 3, Nonce: scripttest.Nonce(t)}); !errors.Is(err, vm1.ErrBadArg) {
		t.Errorf("sliding: %v", err)
	}
	if len(h.Keyspace()) != 0 {
		t.Fatalf("a refused call wrote: %v", h.Keyspace())
	}
}
