package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/elangtest"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/elang/ratelimit"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var limits = []ratelimit.Limit{
	{Name: "login", Algorithm: ratelimit.Sliding, Limit: 100, Window: time.Minute},
	{Name: "api", Algorithm: ratelimit.Fixed, Limit: 100, Window: time.Minute},
}

func hmacKey(t *testing.T) secrets.HMACKey {
	k, err := secrets.NewHMACKey([]byte("elang-test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newLimiter(t *testing.T, srv *redistest.Server, p elang.Prefix) (*ratelimit.Limiter, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := srv.Client(elang.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.ContextTimeoutEnabled = true })
	l, err := ratelimit.New(c, p, hmacKey(t), limits, ratelimit.Options{Registerer: reg, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return l, reg
}

// 40 goroutines make 10 calls each against limits of 100 a minute: exactly
// 100 are allowed per limit, the denied ones carry a Retry-After within the
// window, every bucket lives under the prefix with a TTL, and the subject is
// not in any key.
func TestRateLimitExactUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	p := elangtest.Prefix(t, "rl")
	l, reg := newLimiter(t, srv, p)
	for _, lim := range limits {
		var allowed, denied, errs atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < 40; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					d, err := l.Allow(ctx, lim.Name, "alice@example.com")
					switch {
					case err != nil:
						errs.Add(1)
					case d.Allowed:
						allowed.Add(1)
					case d.RetryAfter <= 0 || d.RetryAfter > time.Minute+time.Second+time.Millisecond: // window + the default 1s jitter + 1 ms
						errs.Add(1)
					default:
						denied.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if allowed.Load() != 100 || denied.Load() != 300 || errs.Load() != 0 {
			t.Fatalf("%s: allowed %d, denied %d, errors %d; want 100, 300, 0", lim.Name, allowed.Load(), denied.Load(), errs.Load())
		}
		if got := promtest.Value(t, reg, "elang_ratelimit_decisions_total", map[string]string{"limit": lim.Name, "result": "allowed"}); got != 100 {
			t.Fatalf("%s: allowed counted %v", lim.Name, got)
		}
	}
	// Another subject has its own budget.
	if d, err := l.Allow(ctx, "api", "bob@example.com"); err != nil || !d.Allowed || d.Remaining != 99 {
		t.Fatalf("bob: %+v %v", d, err)
	}
	keys := srv.Admin().Keys(ctx, "*").Val()
	if len(keys) != 3 {
		t.Fatalf("keys %v, want 3 buckets", keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, p.String()+"ratelimit:") || strings.Contains(k, "alice") || strings.Contains(k, "bob") {
			t.Errorf("bucket %q", k)
		}
		if ttl := srv.Admin().PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Minute+elang.ElangRLMaxJitter {
			t.Errorf("bucket %q TTL %v", k, ttl)
		}
	}
	if _, err := l.Allow(ctx, "nope", "alice"); !errors.Is(err, ratelimit.ErrUnknownLimit) {
		t.Fatalf("an unknown limit: %v", err)
	}
}

// A Redis outage is an error of the limiter (ErrUnavailable, counted), never a
// local allow or deny: a hung server within the timeout, a stopped one at once.
func TestRateLimitFailuresAreReported(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	l, reg := newLimiter(t, srv, elangtest.Prefix(t, "rlfail"))
	srv.Pause()
	start := time.Now()
	if d, err := l.Allow(ctx, "login", "alice"); !errors.Is(err, ratelimit.ErrUnavailable) || d.Allowed {
		t.Fatalf("a call on a hung server: %+v %v", d, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a call on a hung server took %v with a 200ms timeout", took)
	}
	srv.Resume()
	srv.Stop()
	for i := 0; i < 3; i++ {
		if d, err := l.Allow(ctx, "login", "alice"); !errors.Is(err, ratelimit.ErrUnavailable) || d.Allowed {
			t.Fatalf("call %d on a stopped server: %+v %v", i, d, err)
		}
	}
	if got := promtest.Value(t, reg, "elang_ratelimit_failures_total", map[string]string{"limit": "login"}); got != 4 {
		t.Fatalf("failures counted %v, want 4 (1 hung, 3 stopped)", got)
	}
}

// New refuses limits the scripts cannot run.
func TestRateLimitRefusesBadLimits(t *testing.T) {
	p, _ := elang.NewPrefix("x:")
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, bad := range []ratelimit.Limit{
		{Name: "a", Algorithm: "leaky", Limit: 1, Window: time.Second},
		{Name: "a", Algorithm: ratelimit.Sliding, Limit: 10001, Window: time.Second},
		{Name: "a", Algorithm: ratelimit.Fixed, Limit: 1, Window: 1500 * time.Millisecond},
		{Name: "a:b", Algorithm: ratelimit.Fixed, Limit: 1, Window: time.Second},
	} {
		if _, err := ratelimit.New(c, p, hmacKey(t), []ratelimit.Limit{bad}, ratelimit.Options{}); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
