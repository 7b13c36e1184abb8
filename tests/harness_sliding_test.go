package tests

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/scripttest"
)

// The sliding window on the harness's fake clock: Retry-After is exact to the
// millisecond, weights and peeks behave, and the bucket's TTL is window + jitter.
func TestHarnessSlidingWindowExactRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	key, err := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 1)
	if err != nil {
		t.Fatal(err)
	}
	call := func(cost int64, peek bool) vm1.RateDecision {
		t.Helper()
		d, err := scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{
			Limit: 3, Window: time.Second, Jitter: 250 * time.Millisecond, Cost: cost, Peek: peek, Nonce: scripttest.Nonce(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	clock := h.Clock()
	for i := 0; i < 3; i++ {
		if d := call(1, false); !d.Allowed || d.Remaining != int64(2-i) || !d.ResetAt.Equal(clock.Now().Add(time.Second)) {
			t.Fatalf("request %d: %+v", i+1, d)
		}
		clock.Advance(10 * time.Millisecond)
	}
	if ttl := h.Keyspace()[key.String()].TTL; ttl != time.Second+250*time.Millisecond-10*time.Millisecond {
		t.Fatalf("bucket TTL %v, want window + jitter from the last request", ttl)
	}
	// Now scripttest.T0+30ms; the oldest entry (scripttest.T0) leaves at scripttest.T0+1000ms: 970 ms to wait.
	d := call(1, false)
	if d.Allowed || d.Remaining != 0 || d.RetryAfter != 970*time.Millisecond || !d.ResetAt.Equal(scripttest.T0.Add(1020*time.Millisecond)) {
		t.Fatalf("fourth request: %+v", d)
	}
	// A cost of 2 needs two entries to leave: the second oldest, at scripttest.T0+10ms.
	if d := call(2, true); d.Allowed || d.RetryAfter != 980*time.Millisecond {
		t.Fatalf("cost 2: %+v", d)
	}
	clock.Advance(969 * time.Millisecond)
	if d := call(1, true); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("1 ms early: %+v", d)
	}
	clock.Advance(time.Millisecond)
	if d := call(1, true); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("on time (peek): %+v", d)
	}
	if d := call(1, false); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("on time: %+v", d)
	}
	// The bucket vanishes window + jitter after its last write (Redis keeps a key
	// until the clock is strictly past its expiry).
	clock.Advance(time.Second + 250*time.Millisecond)
	if _, ok := h.Keyspace()[key.String()]; !ok {
		t.Fatal("the bucket vanished before its expiry")
	}
	clock.Advance(time.Millisecond)
	if _, ok := h.Keyspace()[key.String()]; ok {
		t.Fatal("the bucket outlived window + jitter")
	}
}

func TestHarnessSlidingPeekWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	key, _ := vm1.NewAPIRLIPKey(testHMACKey.Sum("192.0.2.7"), vm1.APIRoutePublicGet, 60)
	d, err := scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{Limit: 5, Window: time.Minute, Cost: 2, Peek: true, Nonce: scripttest.Nonce(t)})
	if err != nil || !d.Allowed || d.Remaining != 3 {
		t.Fatalf("peek: %+v %v", d, err)
	}
	if len(h.Keyspace()) != 0 {
		t.Fatalf("a peek wrote: %v", h.Keyspace())
	}
}
