package callerlimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/vm2/callerlimit"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
)

var (
	harness = safetytest.Harness
	t0      = safetytest.T0
	ttlOf   = safetytest.TTLOf
)

func newLimiter(t *testing.T, c *safetyredis.Client, callers map[string]callerlimit.Policy) *callerlimit.Limiter {
	t.Helper()
	l, err := callerlimit.New(c, callers)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The Redis path on the harness's fake clock: exact remaining, exact Retry-After
// (the key lives until strictly past its expiry), and a window that reopens.
func TestLimiterExactOnTheHarness(t *testing.T) {
	ctx := context.Background()
	h, c, reg := harness(t)
	l := newLimiter(t, c, map[string]callerlimit.Policy{"api-backend": {Limit: 3, Window: time.Second}})
	for i := 0; i < 3; i++ {
		d, err := l.Allow(ctx, "api-backend", 1)
		if err != nil || !d.Allowed || d.Remaining != int64(2-i) || d.Source != callerlimit.SourceRedis || !d.ResetAt.Equal(t0.Add(1001*time.Millisecond)) {
			t.Fatalf("request %d: %+v %v", i+1, d, err)
		}
		h.Clock().Advance(5 * time.Millisecond)
	}
	// t0+15ms; the counter expires at t0+1000ms and is gone at t0+1001ms.
	d, err := l.Allow(ctx, "api-backend", 1)
	if err != nil || d.Allowed || d.Remaining != 0 || d.RetryAfter != 986*time.Millisecond {
		t.Fatalf("fourth: %+v %v", d, err)
	}
	h.Clock().Advance(985 * time.Millisecond)
	if d, _ := l.Allow(ctx, "api-backend", 1); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("1 ms early: %+v", d)
	}
	h.Clock().Advance(time.Millisecond)
	if d, _ := l.Allow(ctx, "api-backend", 2); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("new window: %+v", d)
	}
	key, _ := vm2.NewSafetyRLServiceKey("api-backend", 1)
	if ttl := ttlOf(t, h, key.String()); ttl != time.Second {
		t.Fatalf("counter TTL %v, want the window", ttl)
	}
	for _, c := range []struct {
		decision string
		want     float64
	}{{"allowed", 4}, {"denied", 2}} {
		if got := promtest.Value(t, reg, "han_safety_rate_limit_decisions_total", map[string]string{"caller": "api-backend", "decision": c.decision, "source": "redis"}); got != c.want {
			t.Errorf("%s: %v, want %v", c.decision, got, c.want)
		}
	}
}

func TestLimiterRefusesBadCalls(t *testing.T) {
	ctx := context.Background()
	h, c, _ := harness(t)
	l := newLimiter(t, c, map[string]callerlimit.Policy{"api-backend": {Limit: 3, Window: time.Second, MaxJitter: 2 * time.Second}})
	if _, err := l.Allow(ctx, "someone-else", 1); !errors.Is(err, callerlimit.ErrUnknownCaller) {
		t.Fatalf("unknown caller: %v", err)
	}
	for _, cost := range []int64{0, -1, 4} {
		if _, err := l.Allow(ctx, "api-backend", cost); !errors.Is(err, callerlimit.ErrInvalidCost) {
			t.Fatalf("cost %d: %v", cost, err)
		}
	}
	if len(h.Keyspace()) != 0 {
		t.Fatal("a refused call wrote a counter")
	}
	// Jitter stays within MaxJitter.
	if _, err := l.Allow(ctx, "api-backend", 1); err != nil {
		t.Fatal(err)
	}
	key, _ := vm2.NewSafetyRLServiceKey("api-backend", 1)
	if ttl := ttlOf(t, h, key.String()); ttl < time.Second || ttl > 3*time.Second {
		t.Fatalf("TTL %v outside window..window+2s", ttl)
	}
	bad := map[string]callerlimit.Policy{
		"zero limit":          {Window: time.Second},
		"fractional window":   {Limit: 1, Window: 1500 * time.Millisecond},
		"window over 24h":     {Limit: 1, Window: 25 * time.Hour},
		"jitter over 2s":      {Limit: 1, Window: time.Second, MaxJitter: 3 * time.Second},
		"local limit of 0":    {Limit: 1, Window: time.Second, Degraded: degraded.LocalLimit},
		"local above limit":   {Limit: 1, Window: time.Second, Degraded: degraded.LocalLimit, LocalLimit: 2},
		"fail-closed + local": {Limit: 1, Window: time.Second, LocalLimit: 1},
		"fail-open":           {Limit: 1, Window: time.Second, Degraded: degraded.FailOpen},
		"unknown policy":      {Limit: 1, Window: time.Second, Degraded: "maybe"},
	}
	for name, p := range bad {
		if _, err := callerlimit.New(c, map[string]callerlimit.Policy{"x": p}); !errors.Is(err, callerlimit.ErrInvalidPolicy) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := callerlimit.New(c, map[string]callerlimit.Policy{"bad:caller*": {Limit: 1, Window: time.Second}}); err == nil {
		t.Error("a caller name that could forge a key was accepted")
	}
}
