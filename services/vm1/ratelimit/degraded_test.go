package ratelimit

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// deadLimiter is a Limiter whose Redis was started and then killed.
func deadLimiter(t *testing.T, p Policy, opts ...func(*Options)) *Limiter {
	t.Helper()
	srv := redistest.Start(t)
	c := srv.Client(vm1.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.DialerRetries = 1; o.DialTimeout = time.Second })
	srv.Kill()
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: c})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{IPKey: testIPKey}
	for _, f := range opts {
		f(&o)
	}
	l, err := New(scripts, p, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Seed 000 §10: with Redis down, mutating routes fail closed (503), reads fail
// open under the edge's limits, public routes use a bounded local limiter.
func TestRedisDownFollowsTheRoutesDegradedMode(t *testing.T) {
	ctx := context.Background()
	l := deadLimiter(t, DefaultPolicy())
	m := l.metrics
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

// The LocalLimit fallback is exact under concurrency, divides limits by the
// number of instances, and once its table is full it denies subjects it does
// not hold.
func TestLocalLimitFallback(t *testing.T) {
	var now atomic.Pointer[time.Time]
	now.Store(&t0)
	at := func(d time.Duration) { t := t0.Add(d); now.Store(&t) }
	l := deadLimiter(t, Policy{vm1.APIRoutePublicGet: {Algorithm: FixedWindow, Degraded: degraded.LocalLimit, Limits: []Limit{
		{Scope: ScopeIP, Limit: 100, Window: time.Minute},
	}}}, func(o *Options) {
		o.LocalDivisor, o.LocalMaxEntries = 4, 2
		o.Now = func() time.Time { return *now.Load() }
	})
	ctx := context.Background()
	ip := func(last byte) Subject { return Subject{IP: netip.AddrFrom4([4]byte{203, 0, 113, last})} }
	var wg sync.WaitGroup
	var allowed atomic.Int64
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := l.Allow(ctx, ip(1), vm1.APIRoutePublicGet)
			if err != nil || !d.Degraded {
				t.Errorf("%+v %v: want a local decision", d, err)
			}
			if d.Allowed {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 25 {
		t.Fatalf("allowed %d, want 100/4 = 25", allowed.Load())
	}
	at(30 * time.Second)
	if d, _ := l.Allow(ctx, ip(1), vm1.APIRoutePublicGet); d.Allowed || d.Limit != 25 || d.RetryAfter != 30*time.Second || d.ResetAfter != 30*time.Second {
		t.Fatalf("denied: %+v", d)
	}
	if d, _ := l.Peek(ctx, ip(2), vm1.APIRoutePublicGet, 1); !d.Allowed || d.Remaining != 24 {
		t.Fatalf("a peek: %+v", d)
	}
	if d, _ := l.Allow(ctx, ip(2), vm1.APIRoutePublicGet); !d.Allowed || d.Remaining != 24 {
		t.Fatalf("the peek took a unit: %+v", d)
	}
	if d, _ := l.Allow(ctx, ip(3), vm1.APIRoutePublicGet); d.Allowed {
		t.Fatalf("a third subject in a table of 2: %+v", d)
	}
	// Windows that are over make room again.
	at(time.Minute)
	if d, _ := l.Allow(ctx, ip(3), vm1.APIRoutePublicGet); !d.Allowed {
		t.Fatalf("after the first window ended: %+v", d)
	}
}

// A Redis that hangs past the caller's deadline is an outage: each route's
// degraded mode applies (fail closed is ErrUnavailable, 503; fail open allows;
// the local limiter decides), whether go-redis gives up on the context's
// deadline or on its own read timeout after it. Cancelling is the caller's own
// doing and stays an error.
func TestHungRedisPastTheDeadlineIsAnOutage(t *testing.T) {
	for _, c := range []struct {
		name string
		opts redis.Options
	}{
		{"context deadline", redis.Options{ContextTimeoutEnabled: true, ReadTimeout: time.Second}},
		{"read timeout after the deadline", redis.Options{ReadTimeout: 300 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			o.Addr, o.MaxRetries, o.DialTimeout, o.Protocol, o.DisableIdentity = redistest.Hung(t), -1, time.Second, 2, true
			client := redis.NewClient(&o)
			t.Cleanup(func() { _ = client.Close() })
			scripts, err := vm1.NewScripts(vm1.Clients{DB0: client})
			if err != nil {
				t.Fatal(err)
			}
			l, err := New(scripts, DefaultPolicy(), Options{IPKey: testIPKey})
			if err != nil {
				t.Fatal(err)
			}
			m := l.metrics
			s := Subject{UserID: userA, DialogID: dialogA, IP: netip.MustParseAddr("203.0.113.5")}
			allow := func(route vm1.APIRoute) (Decision, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				return l.Allow(ctx, s, route)
			}
			if d, err := allow(vm1.APIRouteMessagesSend); !errors.Is(err, ErrUnavailable) || StatusCode(d, err) != 503 {
				t.Fatalf("messages.send (fail closed): %+v %v, want ErrUnavailable (503)", d, err)
			}
			if d, err := allow(vm1.APIRouteProfileGet); err != nil || !d.Allowed || !d.Degraded {
				t.Fatalf("profile.get (fail open): %+v %v, want allowed and degraded", d, err)
			}
			if d, err := allow(vm1.APIRoutePublicGet); err != nil || !d.Allowed || !d.Degraded || d.Remaining != 119 {
				t.Fatalf("public.get (local limit): %+v %v, want the local limiter's decision", d, err)
			}
			if got := testutil.ToFloat64(m.decisions.WithLabelValues("profile.get", "user", "degraded_allowed")); got != 1 {
				t.Errorf("degraded_allowed = %v, want 1", got)
			}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			if d, err := l.Allow(ctx, s, vm1.APIRouteProfileGet); !errors.Is(err, context.Canceled) || d.Allowed {
				t.Fatalf("cancelled by the caller: %+v %v, want context.Canceled", d, err)
			}
		})
	}
}

// A refusal is not an outage: under an ACL that lacks a command the scripts
// call (a deploy whose aclfile is older than its scripts: ERR ... can't run this
// command), or EVALSHA itself (NOPERM), every route answers the error (500),
// never its degraded mode: a fail-open route must not stop limiting because of
// a misconfiguration.
func TestNOPERMNeverTriggersTheDegradedMode(t *testing.T) {
	const pw = "ratelimit-acl-test-password-7f3e"
	srv := redistest.Start(t, redistest.WithACL("user default on nopass ~* &* +@all -zadd -incrby -hset\n"+
		"user noeval on >"+pw+" ~* &* +@all -evalsha -evalsha_ro\n"))
	for _, c := range []struct {
		name   string
		client *redis.Client
		want   error
	}{
		{"a command inside the scripts", srv.Client(vm1.DB0), runtime.ErrScriptReply},
		{"EVALSHA", srv.Client(vm1.DB0, func(o *redis.Options) { o.Username, o.Password = "noeval", pw }), runtime.ErrorCode("NOPERM")},
	} {
		t.Run(c.name, func(t *testing.T) {
			scripts, err := vm1.NewScripts(vm1.Clients{DB0: c.client})
			if err != nil {
				t.Fatal(err)
			}
			p := Policy{
				vm1.APIRouteProfileGet:    {Algorithm: FixedWindow, Degraded: degraded.FailOpen, Limits: []Limit{{Scope: ScopeUser, Limit: 5, Window: time.Minute}}},
				vm1.APIRoutePublicGet:     {Algorithm: SlidingWindow, Degraded: degraded.LocalLimit, Limits: []Limit{{Scope: ScopeIP, Limit: 5, Window: time.Minute}}},
				vm1.APIRouteInternalInbox: {Algorithm: TokenBucket, Degraded: degraded.FailOpen, Limits: []Limit{{Scope: ScopeService, Limit: 5, Window: time.Minute}}},
				vm1.APIRouteMessagesSend:  {Algorithm: SlidingWindow, Degraded: degraded.FailClosed, Limits: []Limit{{Scope: ScopeUser, Limit: 5, Window: time.Minute}}},
			}
			l, err := New(scripts, p, Options{IPKey: testIPKey})
			if err != nil {
				t.Fatal(err)
			}
			m := l.metrics
			s := Subject{UserID: userA, IP: netip.MustParseAddr("203.0.113.5"), Service: "bitrix-sync"}
			for route, rt := range p {
				d, err := l.Allow(context.Background(), s, route)
				if !errors.Is(err, c.want) || errors.Is(err, ErrUnavailable) || d.Allowed || d.Degraded || StatusCode(d, err) != 500 {
					t.Errorf("%s: %+v %v, want %v (500), no degraded decision", route, d, err, c.want)
				}
				for _, result := range []string{resultDegradedAllowed, resultDegradedDenied, resultUnavailable} {
					if got := testutil.ToFloat64(m.decisions.WithLabelValues(string(route), string(rt.Limits[0].Scope), result)); got != 0 {
						t.Errorf("%s %s = %v, want 0", route, result, got)
					}
				}
			}
		})
	}
}

// A bucket another algorithm left on a key (a policy change while it lived) is
// replaced by the scripts, counted from zero, and never read as an outage: the
// fail-open route keeps its limit exactly, where a WRONGTYPE read as an outage
// would allow everything until the old bucket expired.
func TestWrongTypedBucketIsReplacedThroughTheLimiter(t *testing.T) {
	for _, alg := range []Algorithm{SlidingWindow, FixedWindow, TokenBucket} {
		t.Run(string(alg), func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t)
			c := srv.Client(vm1.DB0)
			scripts, err := vm1.NewScripts(vm1.Clients{DB0: c})
			if err != nil {
				t.Fatal(err)
			}
			route := vm1.APIRouteHistoryGet
			l, err := New(scripts, Policy{
				route: {Algorithm: alg, Degraded: degraded.FailOpen, Limits: []Limit{{Scope: ScopeUser, Limit: 3, Window: time.Minute}}},
			}, Options{IPKey: testIPKey})
			if err != nil {
				t.Fatal(err)
			}
			m := l.metrics
			key, _ := vm1.NewAPIRLUserKey(userA, route, 60)
			// What the other algorithms would have left.
			foreign := map[Algorithm][]any{
				SlidingWindow: {"HSET", key.String(), "base", "1", "tat", "1"},
				FixedWindow:   {"ZADD", key.String(), "1", "old"},
				TokenBucket:   {"SET", key.String(), "7"},
			}[alg]
			if err := c.Do(ctx, foreign...).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.PExpire(ctx, key.String(), time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			allowed := 0
			for i := 0; i < 10; i++ {
				d, err := l.Allow(ctx, Subject{UserID: userA}, route)
				if err != nil || d.Degraded {
					t.Fatalf("request %d: %+v %v: want a Redis decision", i+1, d, err)
				}
				if d.Allowed {
					allowed++
				}
			}
			if allowed != 3 {
				t.Fatalf("%d of 10 allowed, want the limit, 3", allowed)
			}
			want := map[Algorithm]string{SlidingWindow: "zset", FixedWindow: "string", TokenBucket: "hash"}[alg]
			if typ := c.Type(ctx, key.String()).Val(); typ != want {
				t.Fatalf("the bucket is a %s, want %s", typ, want)
			}
			if ttl := c.PTTL(ctx, key.String()).Val(); ttl <= 0 {
				t.Fatalf("the replaced bucket has no TTL: %v", ttl)
			}
			if got := testutil.ToFloat64(m.decisions.WithLabelValues(string(route), "user", resultDegradedAllowed)); got != 0 {
				t.Fatalf("degraded_allowed = %v, want 0", got)
			}
		})
	}
}

// killOnRefund kills the server just before the first refund script reaches it.
type killOnRefund struct {
	srv  *redistest.Server
	once sync.Once
}

func (h *killOnRefund) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *killOnRefund) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && a[1] == vm1.RateLimitSlidingRefundScript.SHA1() {
			h.once.Do(h.srv.Kill)
		}
		return next(ctx, cmd)
	}
}

func (h *killOnRefund) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A refund that cannot reach Redis leaves its charge (the safe side: the
// earlier limit counts a request that was denied) and is counted; the request
// is still denied by the limit that denied it.
func TestFailedRefundIsCountedAndTheDenialStands(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(vm1.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.DialerRetries = 1; o.DialTimeout = time.Second })
	c.AddHook(&killOnRefund{srv: srv})
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: c})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(scripts, Policy{vm1.APIRouteMessagesSend: {
		Algorithm: SlidingWindow, Degraded: degraded.FailOpen, Limits: []Limit{
			{Scope: ScopeUser, Limit: 5, Window: time.Minute},
			{Scope: ScopeIP, Limit: 1, Window: time.Minute},
		}}}, Options{IPKey: testIPKey})
	if err != nil {
		t.Fatal(err)
	}
	m := l.metrics
	s := Subject{UserID: userA, IP: netip.MustParseAddr("203.0.113.9")}
	if d, err := l.Allow(ctx, s, vm1.APIRouteMessagesSend); err != nil || !d.Allowed {
		t.Fatalf("first: %+v %v", d, err)
	}
	d, err := l.Allow(ctx, s, vm1.APIRouteMessagesSend)
	if err != nil || d.Allowed || d.Degraded || d.Scope != ScopeIP {
		t.Fatalf("second: %+v %v, want denied by the IP limit", d, err)
	}
	if got := testutil.ToFloat64(m.refundsFailed.WithLabelValues("messages.send", "user")); got != 1 {
		t.Fatalf("refund failures = %v, want 1", got)
	}
}
