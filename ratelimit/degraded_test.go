package ratelimit

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// deadLimiter is a Limiter whose Redis was started and then killed.
func deadLimiter(t *testing.T, p Policy, opts ...func(*Config)) *Limiter {
	t.Helper()
	srv := redistest.Start(t)
	c := srv.Client(vm1.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.DialerRetries = 1; o.DialTimeout = time.Second })
	srv.Kill()
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: c})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Scripts: scripts, Policy: p, IPKey: testIPKey}
	for _, o := range opts {
		o(&cfg)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Seed 000 §10: with Redis down, mutating routes fail closed (503), reads fail
// open under the edge's limits, public routes use a bounded local limiter.
func TestRedisDownFollowsTheRoutesDegradedMode(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	l := deadLimiter(t, DefaultPolicy(), func(c *Config) { c.Metrics = m })
	s := Subject{UserID: userA, DialogID: dialogA, IP: netip.MustParseAddr("203.0.113.5")}

	d, err := l.Allow(ctx, s, vm1.APIRouteMessagesSend)
	if !errors.Is(err, ErrUnavailable) || StatusCode(d, err) != 503 || d.Allowed {
		t.Fatalf("messages.send without Redis: %+v %v, want ErrUnavailable (503)", d, err)
	}
	if d, err := l.Allow(ctx, s, vm1.APIRouteProfileGet); err != nil || !d.Allowed || !d.Degraded {
		t.Fatalf("profile.get without Redis: %+v %v, want allowed and degraded", d, err)
	}
	// public.get: 120 per minute, locally.
	for i := 0; i < 120; i++ {
		if d, err := l.Allow(ctx, s, vm1.APIRoutePublicGet); err != nil || !d.Allowed || !d.Degraded {
			t.Fatalf("public.get %d: %+v %v", i+1, d, err)
		}
	}
	if d, err := l.Allow(ctx, s, vm1.APIRoutePublicGet); err != nil || d.Allowed || !d.Degraded || d.RetryAfter <= 0 || d.RetryAfter > time.Minute {
		t.Fatalf("public.get 121: %+v %v, want denied locally", d, err)
	}
	if got := testutil.ToFloat64(m.decisions.WithLabelValues("messages.send", "user", "unavailable")); got != 1 {
		t.Errorf("unavailable = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.decisions.WithLabelValues("public.get", "ip", "degraded_denied")); got != 1 {
		t.Errorf("degraded_denied = %v, want 1", got)
	}
	// A cancelled request is the caller's error, not a degraded decision.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Allow(cctx, s, vm1.APIRouteProfileGet); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// The local fallback is exact under concurrency, divides limits by the number
// of instances, and once its table is full it denies subjects it does not hold.
func TestLocalLimiter(t *testing.T) {
	ll := newLocalLimiter(2, 4)
	limits := []Limit{{Scope: ScopeIP, Limit: 100, Window: time.Minute}}
	now := t0
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ll.allow(now, vm1.APIRoutePublicGet, limits, []string{"a"}, 1, false).Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != 25 {
		t.Fatalf("allowed %d, want 100/4 = 25", allowed)
	}
	if d := ll.allow(now.Add(30*time.Second), vm1.APIRoutePublicGet, limits, []string{"a"}, 1, false); d.Allowed || d.RetryAfter != 30*time.Second {
		t.Fatalf("denied: %+v", d)
	}
	if d := ll.allow(now, vm1.APIRoutePublicGet, limits, []string{"b"}, 1, true); !d.Allowed || d.Remaining != 24 {
		t.Fatalf("a peek: %+v", d)
	}
	ll.allow(now, vm1.APIRoutePublicGet, limits, []string{"b"}, 1, false)
	if d := ll.allow(now, vm1.APIRoutePublicGet, limits, []string{"c"}, 1, false); d.Allowed {
		t.Fatalf("a third subject in a table of 2: %+v", d)
	}
	// Windows that are over make room again.
	if d := ll.allow(now.Add(time.Minute), vm1.APIRoutePublicGet, limits, []string{"c"}, 1, false); !d.Allowed {
		t.Fatalf("after the windows ended: %+v", d)
	}
}
