package ratelimit_test

import (
	"context"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/redis/go-redis/v9"
)

// ipKey hashes client addresses in these tests; a real service reads its secret from config.
var ipKey, _ = secrets.NewHMACKey([]byte("test-only secret, 32 bytes or more, never in production"))

// limiterOn is a ratelimit.Limiter on real Redis with policy p and no jitter.
func limiterOn(t *testing.T, scripts *vm1.Scripts, p ratelimit.Policy) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(scripts, p, ratelimit.Options{IPKey: ipKey})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Seed 000 §12 "rate Lua concurrency": 500 concurrent requests against a limit
// of 100 allow exactly 100, for each algorithm, and every key has a TTL.
func TestRateLimitConcurrencyIsExactForEachAlgorithm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		alg    ratelimit.Algorithm
		route  vm1.APIRoute
		scope  ratelimit.Scope
		window time.Duration // long enough that nothing leaves or refills during the burst
	}{
		{ratelimit.SlidingWindow, vm1.APIRouteMessagesSend, ratelimit.ScopeUser, time.Minute},
		{ratelimit.FixedWindow, vm1.APIRoutePublicGet, ratelimit.ScopeIP, time.Minute},
		{ratelimit.TokenBucket, vm1.APIRouteInternalInbox, ratelimit.ScopeService, 24 * time.Hour},
	} {
		t.Run(string(c.alg), func(t *testing.T) {
			_, scripts, db0 := scripttest.VM1(t)
			p := ratelimit.Policy{c.route: {Algorithm: c.alg, Limits: []ratelimit.Limit{{Scope: c.scope, Limit: 100, Window: c.window}}}}
			l := limiterOn(t, scripts, p)
			s := ratelimit.Subject{UserID: uuid.NewString(), IP: netip.MustParseAddr("198.51.100.20"), Service: "bitrix-sync"}
			var allowed, denied atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < 500; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					d, err := l.Allow(ctx, s, c.route)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						allowed.Add(1)
					} else if d.RetryAfter > 0 {
						denied.Add(1)
					}
				}()
			}
			close(start)
			wg.Wait()
			if allowed.Load() != 100 || denied.Load() != 400 {
				t.Fatalf("allowed %d, denied with a Retry-After %d; want exactly 100 and 400", allowed.Load(), denied.Load())
			}
			if n := db0.DBSize(ctx).Val(); n != 1 {
				t.Fatalf("%d keys, want the one bucket", n)
			}
			scripttest.AuditTTLs(t, db0, vm1.Keys)
		})
	}
}

// The buckets of every algorithm expire by themselves, window (or refill time)
// plus jitter after their last write.
func TestRateLimitBucketsExpireByThemselves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, scripts, db0 := scripttest.VM1(t)
	p := ratelimit.Policy{
		vm1.APIRouteMessagesSend:  {Algorithm: ratelimit.SlidingWindow, Limits: []ratelimit.Limit{{Scope: ratelimit.ScopeUser, Limit: 5, Window: time.Second}}},
		vm1.APIRouteProfileGet:    {Algorithm: ratelimit.FixedWindow, Limits: []ratelimit.Limit{{Scope: ratelimit.ScopeUser, Limit: 5, Window: time.Second}}},
		vm1.APIRouteInternalInbox: {Algorithm: ratelimit.TokenBucket, Limits: []ratelimit.Limit{{Scope: ratelimit.ScopeService, Limit: 5, Window: time.Second}}},
	}
	l, err := ratelimit.New(scripts, p, ratelimit.Options{MaxJitter: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := ratelimit.Subject{UserID: uuid.NewString(), Service: "bitrix-sync"}
	for _, r := range []vm1.APIRoute{vm1.APIRouteMessagesSend, vm1.APIRouteProfileGet, vm1.APIRouteInternalInbox} {
		for i := 0; i < 5; i++ {
			if d, err := l.Allow(ctx, s, r); err != nil || !d.Allowed {
				t.Fatalf("%s: %+v %v", r, d, err)
			}
		}
	}
	if n := db0.DBSize(ctx).Val(); n != 3 {
		t.Fatalf("%d keys, want 3", n)
	}
	scripttest.AuditTTLs(t, db0, vm1.Keys)
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return db0.DBSize(ctx).Val() == 0 }) {
		t.Fatalf("buckets left after window + jitter: %v", db0.Keys(ctx, "*").Val())
	}
}

// Fixed window on real Redis: Retry-After is PTTL + 1 ms when the script ran,
// and the caller is allowed again exactly then, not before.
func TestFixedWindowRetryAfterOnRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, scripts, db0 := scripttest.VM1(t)
	p := ratelimit.Policy{vm1.APIRouteProfileGet: {Algorithm: ratelimit.FixedWindow, Limits: []ratelimit.Limit{{Scope: ratelimit.ScopeUser, Limit: 2, Window: time.Second}}}}
	l := limiterOn(t, scripts, p)
	s := ratelimit.Subject{UserID: uuid.NewString()}
	key, _ := vm1.NewAPIRLUserKey(s.UserID, vm1.APIRouteProfileGet, 1)
	for i := 0; i < 2; i++ {
		if d, err := l.Allow(ctx, s, vm1.APIRouteProfileGet); err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v %v", i+1, d, err)
		}
	}
	before := scripttest.RedisNow(t, db0)
	d, err := l.Allow(ctx, s, vm1.APIRouteProfileGet)
	if err != nil || d.Allowed {
		t.Fatalf("third: %+v %v", d, err)
	}
	after := scripttest.RedisNow(t, db0)
	pttl := db0.PTTL(ctx, key.String()).Val()
	elapsed := scripttest.RedisNow(t, db0).Sub(before)
	// The script saw PTTL p at its time n; we read PTTL q later: p - q is the time
	// between them, which is at most elapsed.
	if diff := d.RetryAfter - (pttl + time.Millisecond); diff < 0 || diff > elapsed+time.Millisecond {
		t.Fatalf("retry_after %v, PTTL+1 read %v later is %v", d.RetryAfter, elapsed, pttl+time.Millisecond)
	}
	checkAllowedAt(t, db0, before, after, d.RetryAfter, func() bool {
		p, err := l.Peek(ctx, s, vm1.APIRouteProfileGet, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p.Allowed
	})
	scripttest.AuditTTLs(t, db0, vm1.Keys)
}

// Token bucket on real Redis: Retry-After matches the bucket's state read back
// from Redis, and the caller is allowed again exactly then, not before.
func TestTokenBucketRetryAfterOnRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, scripts, db0 := scripttest.VM1(t)
	p := ratelimit.Policy{vm1.APIRouteInternalInbox: {Algorithm: ratelimit.TokenBucket, Limits: []ratelimit.Limit{{Scope: ratelimit.ScopeService, Limit: 4, Window: time.Second}}}}
	l := limiterOn(t, scripts, p)
	s := ratelimit.Subject{Service: "bitrix-sync"}
	key, _ := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 1)
	if d, err := l.AllowN(ctx, s, vm1.APIRouteInternalInbox, 4); err != nil || !d.Allowed {
		t.Fatalf("burst: %+v %v", d, err)
	}
	before := scripttest.RedisNow(t, db0)
	d, err := l.AllowN(ctx, s, vm1.APIRouteInternalInbox, 2)
	if err != nil || d.Allowed {
		t.Fatalf("denied: %+v %v", d, err)
	}
	after := scripttest.RedisNow(t, db0)
	// Recompute from the stored state at a later Redis time: the script's answer
	// exceeds it by the time in between.
	st := db0.HMGet(ctx, key.String(), "base", "tat").Val()
	base, _ := strconv.ParseInt(st[0].(string), 10, 64)
	tat, _ := strconv.ParseInt(st[1].(string), 10, 64)
	now := scripttest.RedisNow(t, db0)
	const limit, window, cost = 4, 1000, 2
	left := max(tat-(now.UnixMilli()-base)*limit, 0)
	want := time.Duration((left+window*cost-window*limit+limit-1)/limit) * time.Millisecond
	if diff := d.RetryAfter - want; diff < 0 || diff > now.Sub(before)+time.Millisecond {
		t.Fatalf("retry_after %v, recomputed %v later: %v", d.RetryAfter, now.Sub(before), want)
	}
	checkAllowedAt(t, db0, before, after, d.RetryAfter, func() bool {
		p, err := l.Peek(ctx, s, vm1.APIRouteInternalInbox, 2)
		if err != nil {
			t.Fatal(err)
		}
		return p.Allowed
	})
	scripttest.AuditTTLs(t, db0, vm1.Keys)
}

// checkAllowedAt polls allowed until it is true and checks, on the Redis clock,
// that no call is allowed before before + retry and none is denied that starts
// at or after after + retry, where before and after bracket the denied call.
// (It checks the denials, not how soon the first allowed poll came: a loaded
// machine may space the polls by more than any fixed slack.)
func checkAllowedAt(t *testing.T, db0 *redis.Client, before, after time.Time, retry time.Duration, allowed func() bool) {
	t.Helper()
	ok := redistest.WaitFor(context.Background(), retry+3*time.Second, func() bool {
		start := scripttest.RedisNow(t, db0)
		if !allowed() {
			// The denial ran in whole ms, so its window ends by after + retry.
			if late := start.Sub(after.Add(retry)); late >= time.Millisecond {
				t.Fatalf("denied %v after retry_after ran out", late)
			}
			return false
		}
		end := scripttest.RedisNow(t, db0)
		// The scripts read TIME in whole milliseconds: retry_after counts from the
		// millisecond the denial ran in, which may begin before `before` (µs).
		if end.Before(before.Truncate(time.Millisecond).Add(retry)) {
			t.Fatalf("allowed at %v, before retry_after ran out (%v)", end.Sub(before), retry)
		}
		return true
	})
	if !ok {
		t.Fatal("never allowed again")
	}
}

// The policy binds each route to one algorithm and each limit to its own key:
// every route of the default policy runs on one Redis for one subject, and each
// key holds the type of its route's algorithm. The control at the end shows the
// hazard the policy avoids: two algorithms on one key replace each other's bucket.
func TestDefaultPolicyKeepsOneAlgorithmPerKeyOnRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, scripts, db0 := scripttest.VM1(t)
	policy := ratelimit.DefaultPolicy()
	l := limiterOn(t, scripts, policy)
	s := ratelimit.Subject{UserID: uuid.NewString(), DialogID: uuid.NewString(), IP: netip.MustParseAddr("192.0.2.44"), Service: "bitrix-sync"}
	want := map[string]string{}
	redisType := map[ratelimit.Algorithm]string{ratelimit.SlidingWindow: "zset", ratelimit.FixedWindow: "string", ratelimit.TokenBucket: "hash"}
	for route, rt := range policy {
		for round := 0; round < 3; round++ {
			if _, err := l.Allow(ctx, s, route); err != nil {
				t.Fatalf("%s: %v", route, err)
			}
		}
		for _, lim := range rt.Limits {
			w := int64(lim.Window / time.Second)
			var k string
			switch lim.Scope {
			case ratelimit.ScopeUser:
				key, _ := vm1.NewAPIRLUserKey(s.UserID, route, w)
				k = key.String()
			case ratelimit.ScopeIP:
				key, _ := vm1.NewAPIRLIPKey(ipKey.Sum(s.IP.String()), route, w)
				k = key.String()
			case ratelimit.ScopeDialog:
				key, _ := vm1.NewAPIRLDialogKey(s.DialogID, w)
				k = key.String()
			case ratelimit.ScopeService:
				key, _ := vm1.NewAPIRLServiceKey(s.Service, route, w)
				k = key.String()
			}
			if prev, ok := want[k]; ok {
				t.Fatalf("route %s reuses a key of type %s", route, prev)
			}
			want[k] = redisType[rt.Algorithm]
		}
	}
	keys := db0.Keys(ctx, "*").Val()
	if len(keys) != len(want) {
		t.Fatalf("%d keys in Redis, want one per limit (%d)", len(keys), len(want))
	}
	for k, typ := range want {
		if got := db0.Type(ctx, k).Val(); got != typ {
			t.Errorf("key %s is a %s, want %s", k, got, typ)
		}
	}
	scripttest.AuditTTLs(t, db0, vm1.Keys)

	// The control: the scripts themselves accept one key pattern under several
	// algorithms. A key one algorithm left is replaced by another (a bucket is
	// disposable), never answered WRONGTYPE: the policy keeps algorithms apart
	// so that this only happens once, after a policy change. (This control
	// asserted WRONGTYPE before the scripts replaced foreign buckets.)
	key, _ := vm1.NewAPIRLUserKey(s.UserID, vm1.APIRouteMessagesSend, 60)
	d, err := scripts.RateLimitFixed(ctx, key, vm1.RateLimitFixedArgs{Limit: 5, Window: time.Minute, Cost: 1})
	if err != nil || !d.Allowed || d.Remaining != 4 {
		t.Fatalf("a fixed window on a sliding window's key: %+v %v, want a fresh window", d, err)
	}
	if typ := db0.Type(ctx, key.String()).Val(); typ != "string" {
		t.Fatalf("the key is a %s, want the fixed window's counter", typ)
	}
	scripttest.AuditTTLs(t, db0, vm1.Keys)
}

// multiLimitCase is one algorithm on a route with a user limit and an IP limit.
type multiLimitCase struct {
	alg    ratelimit.Algorithm
	route  vm1.APIRoute
	window time.Duration // long enough that nothing leaves or refills during the burst
}

var multiLimitCases = []multiLimitCase{
	{ratelimit.SlidingWindow, vm1.APIRouteMessagesSend, time.Minute},
	{ratelimit.FixedWindow, vm1.APIRouteProfileGet, time.Minute},
	{ratelimit.TokenBucket, vm1.APIRouteInternalInbox, 24 * time.Hour},
}

// userUnitsTaken peeks a user bucket directly through its script and reports
// the units it holds (at most limit: a full bucket denies the peek).
func userUnitsTaken(t *testing.T, scripts *vm1.Scripts, alg ratelimit.Algorithm, key vm1.APIRLUserKey, limit int64, window time.Duration) int64 {
	t.Helper()
	ctx := context.Background()
	var d vm1.RateDecision
	var err error
	switch alg {
	case ratelimit.SlidingWindow:
		d, err = scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{Limit: limit, Window: window, Cost: 1, Peek: true, Nonce: scripttest.Nonce(t)})
	case ratelimit.FixedWindow:
		d, err = scripts.RateLimitFixed(ctx, key, vm1.RateLimitFixedArgs{Limit: limit, Window: window, Cost: 1, Peek: true})
	default:
		d, err = scripts.RateLimitTokenBucket(ctx, key, vm1.RateLimitTokenBucketArgs{Limit: limit, Window: window, Cost: 1, Peek: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed {
		return limit
	}
	return limit - 1 - d.Remaining
}

// A route with two limits, 500 concurrent requests of one subject: exactly 50
// are allowed (the IP limit, the later one), and the user limit (100, the
// earlier one) holds exactly those 50 once the burst is over, not the 100 it
// would have kept for requests the IP limit denied. While the burst runs, the
// user limit also counts charges about to be given back, so some requests are
// denied by it; the IP limit is full by then, so they would have been denied
// anyway. For each algorithm, on real Redis.
func TestMultiLimitConcurrencyIsExactForEachAlgorithm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range multiLimitCases {
		t.Run(string(c.alg), func(t *testing.T) {
			_, scripts, db0 := scripttest.VM1(t)
			p := ratelimit.Policy{c.route: {Algorithm: c.alg, Limits: []ratelimit.Limit{
				{Scope: ratelimit.ScopeUser, Limit: 100, Window: c.window},
				{Scope: ratelimit.ScopeIP, Limit: 50, Window: c.window},
			}}}
			l := limiterOn(t, scripts, p)
			s := ratelimit.Subject{UserID: uuid.NewString(), IP: netip.MustParseAddr("198.51.100.30")}
			var allowed, denied atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < 500; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					d, err := l.Allow(ctx, s, c.route)
					switch {
					case err != nil:
						t.Error(err)
					case d.Allowed:
						allowed.Add(1)
					case d.RetryAfter > 0:
						denied.Add(1)
					default:
						t.Errorf("denied without a Retry-After: %+v", d)
					}
				}()
			}
			close(start)
			wg.Wait()
			if allowed.Load() != 50 || denied.Load() != 450 {
				t.Fatalf("allowed %d, denied %d; want exactly 50 and 450", allowed.Load(), denied.Load())
			}
			userKey, _ := vm1.NewAPIRLUserKey(s.UserID, c.route, int64(c.window/time.Second))
			if taken := userUnitsTaken(t, scripts, c.alg, userKey, 100, c.window); taken != 50 {
				t.Fatalf("the user bucket holds %d units, want the 50 allowed", taken)
			}
			if n := db0.DBSize(ctx).Val(); n != 2 {
				t.Fatalf("%d keys, want the two buckets", n)
			}
			scripttest.AuditTTLs(t, db0, vm1.Keys)
		})
	}
}

// Ten users behind one address, ten concurrent requests each: the per-user
// limit (5, first) and the address limit (20, last) allow exactly 20 in all,
// and each user's bucket holds exactly that user's allowed requests: a request
// the address denied left nothing on its user's limit.
func TestMultiLimitManyUsersOneAddressIsExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range multiLimitCases {
		t.Run(string(c.alg), func(t *testing.T) {
			_, scripts, db0 := scripttest.VM1(t)
			p := ratelimit.Policy{c.route: {Algorithm: c.alg, Limits: []ratelimit.Limit{
				{Scope: ratelimit.ScopeUser, Limit: 5, Window: c.window},
				{Scope: ratelimit.ScopeIP, Limit: 20, Window: c.window},
			}}}
			l := limiterOn(t, scripts, p)
			ip := netip.MustParseAddr("198.51.100.31")
			users := make([]string, 10)
			perUser := make([]atomic.Int64, len(users))
			for i := range users {
				users[i] = uuid.NewString()
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for u := range users {
				for i := 0; i < 10; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						d, err := l.Allow(ctx, ratelimit.Subject{UserID: users[u], IP: ip}, c.route)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							perUser[u].Add(1)
						}
					}()
				}
			}
			close(start)
			wg.Wait()
			total := int64(0)
			for u := range users {
				n := perUser[u].Load()
				total += n
				if n > 5 {
					t.Errorf("user %d: %d allowed, above its limit of 5", u, n)
				}
				key, _ := vm1.NewAPIRLUserKey(users[u], c.route, int64(c.window/time.Second))
				if taken := userUnitsTaken(t, scripts, c.alg, key, 5, c.window); taken != n {
					t.Errorf("user %d: its bucket holds %d units, %d were allowed", u, taken, n)
				}
			}
			if total != 20 {
				t.Fatalf("%d allowed in all, want exactly the address's 20", total)
			}
			scripttest.AuditTTLs(t, db0, vm1.Keys)
		})
	}
}

// On real Redis, a request that both limits of its route deny is told to wait
// for the later one's Retry-After (the longer), and is allowed again exactly
// then, not before.
func TestMultiLimitRetryAfterOnRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, scripts, db0 := scripttest.VM1(t)
	p := ratelimit.Policy{vm1.APIRouteMessagesSend: {Algorithm: ratelimit.SlidingWindow, Limits: []ratelimit.Limit{
		{Scope: ratelimit.ScopeUser, Limit: 2, Window: time.Second},
		{Scope: ratelimit.ScopeIP, Limit: 3, Window: 2 * time.Second},
	}}}
	l := limiterOn(t, scripts, p)
	ip := netip.MustParseAddr("192.0.2.60")
	a, b := ratelimit.Subject{UserID: uuid.NewString(), IP: ip}, ratelimit.Subject{UserID: uuid.NewString(), IP: ip}
	for _, s := range []ratelimit.Subject{a, a, b} {
		if d, err := l.Allow(ctx, s, vm1.APIRouteMessagesSend); err != nil || !d.Allowed {
			t.Fatalf("filling: %+v %v", d, err)
		}
	}
	before := scripttest.RedisNow(t, db0)
	d, err := l.Allow(ctx, a, vm1.APIRouteMessagesSend)
	after := scripttest.RedisNow(t, db0)
	if err != nil || d.Allowed || d.Scope != ratelimit.ScopeIP || d.RetryAfter <= time.Second || d.RetryAfter > 2*time.Second {
		t.Fatalf("denied by both: %+v %v, want the IP limit's Retry-After (over 1 s, the user limit's is under)", d, err)
	}
	checkAllowedAt(t, db0, before, after, d.RetryAfter, func() bool {
		p, err := l.Peek(ctx, a, vm1.APIRouteMessagesSend, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p.Allowed
	})
	scripttest.AuditTTLs(t, db0, vm1.Keys)
}
