package callerlimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/vm2/callerlimit"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/prometheus/client_golang/prometheus"
)

// Many goroutines of several Message Safety processes (each its own Client and
// Limiter) share one caller's window: exactly the limit is allowed, no more, no less,
// and the counter holds exactly what was allowed.
func TestSafetyRateLimitConcurrencyIsExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		limit, cost   int64
		calls         int
		wantAllowed   int64
		wantCounter   int64
		wantRemaining int64
	}{
		{"cost 1", 100, 1, 600, 100, 100, 0},
		{"cost 3", 100, 3, 600, 33, 99, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv, db0 := safetytest.StartRedis(t)
			policy := map[string]callerlimit.Policy{"link-worker": {Limit: tc.limit, Window: time.Minute, MaxJitter: time.Second}}
			var limiters []*callerlimit.Limiter
			var clients []*safetyredis.Client
			var regs []*prometheus.Registry
			for i := 0; i < 4; i++ {
				c, reg := safetytest.New(t, srv.Client(vm2.DB0), safetyredis.Options{RateLimitTimeout: 5 * time.Second})
				l, err := callerlimit.New(c, policy)
				if err != nil {
					t.Fatal(err)
				}
				limiters, clients, regs = append(limiters, l), append(clients, c), append(regs, reg)
			}
			var allowed, denied atomic.Int64
			var minRemaining atomic.Int64
			minRemaining.Store(tc.limit)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < tc.calls; i++ {
				wg.Add(1)
				go func(l *callerlimit.Limiter) {
					defer wg.Done()
					<-start
					d, err := l.Allow(ctx, "link-worker", tc.cost)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Source != callerlimit.SourceRedis {
						t.Errorf("decided by %s", d.Source)
					}
					if d.Allowed {
						allowed.Add(1)
					} else {
						denied.Add(1)
						if d.RetryAfter <= 0 || d.RetryAfter > time.Minute+time.Second+time.Millisecond {
							t.Errorf("denied with retry_after %v", d.RetryAfter)
						}
					}
					for {
						m := minRemaining.Load()
						if d.Remaining >= m || minRemaining.CompareAndSwap(m, d.Remaining) {
							break
						}
					}
				}(limiters[i%len(limiters)])
			}
			close(start)
			wg.Wait()
			if allowed.Load() != tc.wantAllowed || denied.Load() != int64(tc.calls)-tc.wantAllowed {
				t.Fatalf("allowed %d, denied %d; want exactly %d and %d", allowed.Load(), denied.Load(), tc.wantAllowed, int64(tc.calls)-tc.wantAllowed)
			}
			key, _ := vm2.NewSafetyRLServiceKey("link-worker", 60)
			if n, err := db0.Get(ctx, key.String()).Int64(); err != nil || n != tc.wantCounter {
				t.Fatalf("counter %d (%v), want %d", n, err, tc.wantCounter)
			}
			if pttl := db0.PTTL(ctx, key.String()).Val(); pttl <= 0 || pttl > time.Minute+time.Second {
				t.Fatalf("counter TTL %v, want window + jitter at most", pttl)
			}
			if minRemaining.Load() != tc.wantRemaining {
				t.Fatalf("lowest remaining %d, want %d", minRemaining.Load(), tc.wantRemaining)
			}
			for _, c := range clients {
				if c.Degraded() {
					t.Fatal("a client went degraded under load")
				}
			}
			// The decisions metric counts exactly what the callers saw.
			var counted float64
			for _, reg := range regs {
				counted += promtest.Value(t, reg, "han_safety_rate_limit_decisions_total", map[string]string{"caller": "link-worker", "decision": "allowed", "source": "redis"})
			}
			if counted != float64(tc.wantAllowed) {
				t.Fatalf("metric counted %v allowed, want %d", counted, tc.wantAllowed)
			}
		})
	}
}

// Retry-After on real Redis points at the end of the window: a retry once it has
// passed is allowed, and none is before.
func TestSafetyRateLimitRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, db0 := safetytest.StartRedis(t)
	c, _ := safetytest.New(t, srv.Client(vm2.DB0), safetyredis.Options{RateLimitTimeout: 5 * time.Second})
	l, err := callerlimit.New(c, map[string]callerlimit.Policy{"api-backend": {Limit: 2, Window: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if d, err := l.Allow(ctx, "api-backend", 1); err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v %v", i+1, d, err)
		}
	}
	start := time.Now()
	before := scripttest.RedisNow(t, db0)
	d, err := l.Allow(ctx, "api-backend", 1)
	if err != nil || d.Allowed || d.Source != callerlimit.SourceRedis || d.RetryAfter <= 0 || d.RetryAfter > time.Second+time.Millisecond {
		t.Fatalf("third: %+v %v", d, err)
	}
	// The script ran between before and now, so reset_at - before is
	// retry_after plus at most the time that took.
	took := time.Since(start)
	allowedAt := d.ResetAt
	if got := allowedAt.Sub(before); got < d.RetryAfter-scripttest.ClockSlack || got > d.RetryAfter+scripttest.ClockSlack+took {
		t.Fatalf("reset_at %v after now, retry_after %v (the call took %v)", got, d.RetryAfter, took)
	}
	key, _ := vm2.NewSafetyRLServiceKey("api-backend", 1)
	ok := redistest.WaitFor(ctx, 3*time.Second, func() bool {
		gone := db0.Exists(ctx, key.String()).Val() == 0
		if gone && scripttest.RedisNow(t, db0).Before(allowedAt.Add(-scripttest.ClockSlack)) {
			t.Fatalf("the window ended %v before reset_at", allowedAt.Sub(scripttest.RedisNow(t, db0)))
		}
		return gone
	})
	if !ok {
		t.Fatal("the window never ended")
	}
	if d, err := l.Allow(ctx, "api-backend", 2); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after the window: %+v %v", d, err)
	}
}
