package callerlimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/vm2/callerlimit"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/redis/go-redis/v9"
)

// answer is one decision and when the client sent and got it, in Unix ms of the
// system clock Redis's TIME reads too.
type answer struct {
	d          callerlimit.Decision
	sent, recv int64
}

// The caller's fixed window answers reset_at = the counter's own expiry + 1 ms on
// every denial (never the millisecond the counter still exists: TIME + PTTL was
// 1 ms early whenever a millisecond boundary fell between them), in a burst of
// concurrent denials and in a long sequential run, and retry_after counts from
// the script's clock, so a caller that waits exactly retry_after after the answer
// comes back no earlier than reset_at.
func TestSafetyRateLimitResetIsTheKeysExpiryOnRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(0)
	c, err := safetyredis.New(rdb, safetyredis.Options{RateLimitTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l, err := callerlimit.New(c, map[string]callerlimit.Policy{
		"burst":      {Limit: 2, Window: time.Minute, MaxJitter: 2 * time.Second},
		"sequential": {Limit: 2, Window: 2 * time.Minute, MaxJitter: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(t *testing.T, caller string) answer {
		sent := time.Now().UnixMilli()
		d, err := l.Allow(ctx, caller, 1)
		recv := time.Now().UnixMilli()
		if err != nil {
			t.Error(err)
		}
		return answer{d: d, sent: sent, recv: recv}
	}
	open := func(t *testing.T, caller string, window int64) int64 {
		key, err := vm2.NewSafetyRLServiceKey(caller, window)
		if err != nil {
			t.Fatal(err)
		}
		var expiry int64
		for i := 0; i < 2; i++ {
			a := call(t, caller)
			if i == 0 {
				expiry = pexpiretime(t, rdb, key.String())
			}
			if !a.d.Allowed || a.d.Source != callerlimit.SourceRedis || a.d.ResetAt.UnixMilli() != expiry+1 {
				t.Fatalf("request %d: %+v, want allowed by Redis with reset_at %d", i+1, a.d, expiry+1)
			}
		}
		return expiry
	}
	check := func(t *testing.T, expiry int64, as []answer) {
		t.Helper()
		early, late, badRetry := 0, 0, 0
		for _, a := range as {
			if a.d.Allowed || a.d.Source != callerlimit.SourceRedis {
				t.Fatalf("want a denial by Redis: %+v", a.d)
			}
			reset := a.d.ResetAt.UnixMilli()
			switch {
			case reset <= expiry:
				early++
			case reset > expiry+1:
				late++
			}
			now := reset - a.d.RetryAfter.Milliseconds()
			if a.d.RetryAfter < time.Millisecond || now < a.sent || now > a.recv || a.recv+a.d.RetryAfter.Milliseconds() < reset {
				badRetry++
			}
		}
		if early+late+badRetry > 0 {
			t.Errorf("of %d denials, reset_at was early (the counter expiring at %d still exists then) in %d, late in %d; retry_after inconsistent in %d",
				len(as), expiry, early, late, badRetry)
		}
	}

	t.Run("burst", func(t *testing.T) {
		const workers, each = 20, 100
		expiry := open(t, "burst", 60)
		var mu sync.Mutex
		var all []answer
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				as := make([]answer, 0, each)
				for i := 0; i < each; i++ {
					as = append(as, call(t, "burst"))
				}
				mu.Lock()
				all = append(all, as...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(all) != workers*each {
			t.Fatalf("%d answers, want %d", len(all), workers*each)
		}
		check(t, expiry, all)
	})
	t.Run("sequential", func(t *testing.T) {
		const n = 5000
		expiry := open(t, "sequential", 120)
		as := make([]answer, 0, n)
		for i := 0; i < n; i++ {
			as = append(as, call(t, "sequential"))
		}
		check(t, expiry, as)
	})
}

// pexpiretime is the key's absolute expiry in Unix ms.
func pexpiretime(t *testing.T, rdb *redis.Client, key string) int64 {
	t.Helper()
	ms, err := rdb.Do(context.Background(), "pexpiretime", key).Int64()
	if err != nil || ms < 0 {
		t.Fatalf("PEXPIRETIME %s: %d %v", key, ms, err)
	}
	return ms
}
