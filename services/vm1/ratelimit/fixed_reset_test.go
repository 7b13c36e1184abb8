package ratelimit_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/redis/go-redis/v9"
)

// expiryOf is the key's absolute expiry in Unix ms (PEXPIRETIME).
func expiryOf(t *testing.T, rdb *redis.Client, key string) int64 {
	t.Helper()
	ms, err := rdb.Do(context.Background(), "pexpiretime", key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if ms < 0 {
		t.Fatalf("%s has no expiry (%d)", key, ms)
	}
	return ms
}

// denial is one answer of the fixed window and when the client sent and got it,
// in Unix ms of the same system clock Redis's TIME reads.
type denial struct {
	d          vm1.RateDecision
	sent, recv int64
}

// checkDenials fails for every denial that is not exact: the key expires at
// expiry, so it is gone at expiry+1 and not before; reset_at must be exactly
// that, and retry_after must count from the script's own clock (between the
// client's send and receive), so that a client that waits exactly retry_after
// from its receipt comes back no earlier than reset_at.
func checkDenials(t *testing.T, what string, expiry int64, ds []denial) {
	t.Helper()
	early, late, badRetry := 0, 0, 0
	for _, x := range ds {
		if x.d.Allowed {
			t.Fatalf("%s: an allowed answer among the denials: %+v", what, x.d)
		}
		reset := x.d.ResetAt.UnixMilli()
		switch {
		case reset <= expiry:
			early++
		case reset > expiry+1:
			late++
		}
		now := reset - x.d.RetryAfter.Milliseconds()
		if x.d.RetryAfter < time.Millisecond || now < x.sent || now > x.recv || x.recv+x.d.RetryAfter.Milliseconds() < reset {
			badRetry++
		}
	}
	if early+late+badRetry > 0 {
		t.Errorf("%s: of %d denials, reset_at was early (at or before the key's expiry %d, while it still exists) in %d, late in %d; retry_after inconsistent in %d",
			what, len(ds), expiry, early, late, badRetry)
	}
}

// The fixed window's reset_at is the key's own expiry + 1 ms on every denial, a
// burst of concurrent ones and a long sequential run alike (TIME + PTTL was 1 ms
// early whenever a millisecond boundary fell between the two reads, about 1 in 100
// denials), and retry_after counts from the script's clock. The same holds for
// the answer that opens a window.
func TestFixedWindowResetIsTheKeysExpiryOnRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(vm1.DB0)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: rdb})
	if err != nil {
		t.Fatal(err)
	}
	args := vm1.RateLimitFixedArgs{Limit: 3, Window: time.Minute, Jitter: 750 * time.Millisecond, Cost: 1}
	call := func(t *testing.T, key vm1.APIRLUserKey) denial {
		sent := time.Now().UnixMilli()
		d, err := scripts.RateLimitFixed(ctx, key, args)
		recv := time.Now().UnixMilli()
		if err != nil {
			t.Error(err)
		}
		return denial{d: d, sent: sent, recv: recv}
	}
	open := func(t *testing.T) (vm1.APIRLUserKey, int64) {
		key, err := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteProfileGet, 60)
		if err != nil {
			t.Fatal(err)
		}
		first := call(t, key)
		expiry := expiryOf(t, rdb, key.String())
		if !first.d.Allowed || first.d.ResetAt.UnixMilli() != expiry+1 {
			t.Fatalf("the window's first request: %+v, want allowed with reset_at %d", first.d, expiry+1)
		}
		for i := int64(1); i < args.Limit; i++ {
			if d := call(t, key); !d.d.Allowed || d.d.ResetAt.UnixMilli() != expiry+1 {
				t.Fatalf("request %d: %+v", i+1, d.d)
			}
		}
		return key, expiry
	}

	t.Run("burst", func(t *testing.T) {
		const workers, each = 20, 100
		key, expiry := open(t)
		var mu sync.Mutex
		var all []denial
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ds := make([]denial, 0, each)
				for i := 0; i < each; i++ {
					ds = append(ds, call(t, key))
				}
				mu.Lock()
				all = append(all, ds...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(all) != workers*each {
			t.Fatalf("%d answers, want %d", len(all), workers*each)
		}
		if after := expiryOf(t, rdb, key.String()); after != expiry {
			t.Fatalf("denials moved the window's end from %d to %d", expiry, after)
		}
		checkDenials(t, "burst", expiry, all)
	})

	t.Run("sequential", func(t *testing.T) {
		const n = 5000
		key, expiry := open(t)
		ds := make([]denial, 0, n)
		for i := 0; i < n; i++ {
			ds = append(ds, call(t, key))
		}
		if after := expiryOf(t, rdb, key.String()); after != expiry {
			t.Fatalf("denials moved the window's end from %d to %d", expiry, after)
		}
		checkDenials(t, "sequential", expiry, ds)
	})

	t.Run("opening answers", func(t *testing.T) {
		// 500 windows, each opened by one request: reset_at is the new key's
		// expiry + 1 ms every time.
		for i := 0; i < 500; i++ {
			key, err := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteProfileGet, 60)
			if err != nil {
				t.Fatal(err)
			}
			d := call(t, key)
			if want := expiryOf(t, rdb, key.String()) + 1; !d.d.Allowed || d.d.ResetAt.UnixMilli() != want {
				t.Fatalf("window %d: %+v, want reset_at %d", i, d.d, want)
			}
		}
	})
}

// Through the Limiter on a route with two fixed-window limits: every denial by
// the second limit answers the key's expiry + 1 ms, and every refund of the first
// limit's charge (which finds its window by that reset_at) gives the unit back,
// so the first counter ends exactly where the allowed requests left it.
func TestLimiterFixedWindowResetAndRefundsOnRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(vm1.DB0)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: rdb})
	if err != nil {
		t.Fatal(err)
	}
	route := vm1.APIRouteProfileGet
	l, err := ratelimit.New(scripts, ratelimit.Policy{
		route: {Algorithm: ratelimit.FixedWindow, Degraded: degraded.FailClosed, Limits: []ratelimit.Limit{
			{Scope: ratelimit.ScopeUser, Limit: 100000, Window: time.Minute},
			{Scope: ratelimit.ScopeIP, Limit: 2, Window: 2 * time.Minute},
		}},
	}, ratelimit.Options{IPKey: ipKey})
	if err != nil {
		t.Fatal(err)
	}
	s := ratelimit.Subject{UserID: uuid.NewString(), IP: netip.MustParseAddr("198.51.100.7")}
	userKey, _ := vm1.NewAPIRLUserKey(s.UserID, route, 60)
	for i := 0; i < 2; i++ {
		if d, err := l.Allow(ctx, s, route); err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v %v", i+1, d, err)
		}
	}
	expiry := expiryOf(t, rdb, onlyKey(t, rdb, vm1.APIRLIPPattern))

	const workers, each = 8, 250
	var mu sync.Mutex
	var all []denial
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ds []denial
			for i := 0; i < each; i++ {
				sent := time.Now().UnixMilli()
				d, err := l.Allow(ctx, s, route)
				recv := time.Now().UnixMilli()
				if err != nil {
					t.Error(err)
					return
				}
				if d.Scope != ratelimit.ScopeIP {
					t.Errorf("denied by %s, want the ip limit", d.Scope)
					return
				}
				ds = append(ds, denial{d: vm1.RateDecision{Allowed: d.Allowed, Remaining: d.Remaining, RetryAfter: d.RetryAfter, ResetAt: d.ResetAt}, sent: sent, recv: recv})
			}
			mu.Lock()
			all = append(all, ds...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(all) != workers*each {
		t.Fatalf("%d denials, want %d", len(all), workers*each)
	}
	checkDenials(t, "limiter", expiry, all)
	if got, err := rdb.Get(ctx, userKey.String()).Int64(); err != nil || got != 2 {
		t.Fatalf("the user counter holds %d (%v), want 2: a refund missed its window", got, err)
	}
}

// onlyKey is the one key of rdb's database that matches pattern.
func onlyKey(t *testing.T, rdb *redis.Client, pattern string) string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), pattern).Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %s: %v %v, want exactly one", pattern, keys, err)
	}
	return keys[0]
}
