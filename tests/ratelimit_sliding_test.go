package tests

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/runtime"
)

func TestSlidingWindowThroughTheWrapper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, scripts, db0 := scripttest.VM1(t)
	key, err := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 1)
	if err != nil {
		t.Fatal(err)
	}
	args := func(peek bool) vm1.RateLimitSlidingArgs {
		return vm1.RateLimitSlidingArgs{Limit: 5, Window: time.Second, Jitter: 100 * time.Millisecond, Cost: 1, Peek: peek, Nonce: scripttest.Nonce(t)}
	}

	var first time.Time
	for i := 0; i < 5; i++ {
		before := scripttest.RedisNow(t, db0)
		d, err := scripts.RateLimitSliding(ctx, key, args(false))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = before
		}
		if !d.Allowed || d.Remaining != int64(4-i) || d.RetryAfter != 0 {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	pttl, err := db0.PTTL(ctx, key.String()).Result()
	if err != nil || pttl <= 0 || pttl > time.Second+100*time.Millisecond {
		t.Fatalf("bucket TTL %v, %v: want window + jitter at most", pttl, err)
	}

	// The sixth is denied; retry_after points at the first request leaving the window.
	now := scripttest.RedisNow(t, db0)
	d, err := scripts.RateLimitSliding(ctx, key, args(false))
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || d.Remaining != 0 {
		t.Fatalf("sixth request: %+v", d)
	}
	leave := first.Add(time.Second)
	if lo, hi := leave.Sub(now)-20*time.Millisecond, leave.Sub(now)+20*time.Millisecond; d.RetryAfter < lo || d.RetryAfter > hi {
		t.Fatalf("retry_after %v, want about %v", d.RetryAfter, leave.Sub(now))
	}
	// A peek neither consumes nor writes.
	card := db0.ZCard(ctx, key.String()).Val()
	if p, err := scripts.RateLimitSliding(ctx, key, args(true)); err != nil || p.Allowed {
		t.Fatalf("peek: %+v %v", p, err)
	}
	if db0.ZCard(ctx, key.String()).Val() != card {
		t.Fatal("a peek changed the bucket")
	}

	// Allowed again once retry_after has passed, not before.
	allowedAt := now.Add(d.RetryAfter)
	ok := redistest.WaitFor(ctx, 3*time.Second, func() bool {
		p, err := scripts.RateLimitSliding(ctx, key, args(true))
		if err != nil {
			t.Fatal(err)
		}
		if p.Allowed && scripttest.RedisNow(t, db0).Before(allowedAt.Add(-5*time.Millisecond)) {
			t.Fatalf("allowed %v before retry_after said", allowedAt.Sub(scripttest.RedisNow(t, db0)))
		}
		return p.Allowed
	})
	if !ok {
		t.Fatal("never allowed again")
	}
	// The bucket expires by itself.
	if !redistest.WaitFor(ctx, 3*time.Second, func() bool { return db0.Exists(ctx, key.String()).Val() == 0 }) {
		t.Fatal("the bucket never expired")
	}
}

func TestSlidingWindowConcurrencyIsExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, scripts, db0 := scripttest.VM1(t)
	key, err := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 60)
	if err != nil {
		t.Fatal(err)
	}
	var allowed, denied atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 500; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d, err := scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{Limit: 100, Window: time.Minute, Cost: 1, Nonce: scripttest.Nonce(t)})
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			} else {
				denied.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if allowed.Load() != 100 || denied.Load() != 400 {
		t.Fatalf("allowed %d denied %d, want exactly 100 and 400", allowed.Load(), denied.Load())
	}
	if n := db0.ZCard(ctx, key.String()).Val(); n != 100 {
		t.Fatalf("bucket holds %d entries, want 100", n)
	}
	scripttest.AuditTTLs(t, db0, vm1.Keys)
}

func TestSlidingWindowRefusesBadInputBeforeRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, scripts, _ := scripttest.VM1(t)
	if _, err := vm1.NewAPIRLUserKey("user:*", vm1.APIRouteMessagesSend, 60); !errors.Is(err, runtime.ErrInvalidKeyPart) {
		t.Fatalf("a forging user id: %v", err)
	}
	if _, err := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRoute("admin.secret"), 60); !errors.Is(err, runtime.ErrInvalidKeyPart) {
		t.Fatalf("a route outside the allow-list: %v", err)
	}
	key, _ := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 60)
	if _, err := scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{Limit: 0, Window: time.Minute, Cost: 1, Nonce: scripttest.Nonce(t)}); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Fatalf("limit 0: %v", err)
	}
	if _, err := scripts.RateLimitSliding(ctx, nil, vm1.RateLimitSlidingArgs{Limit: 1, Window: time.Minute, Cost: 1, Nonce: scripttest.Nonce(t)}); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Fatalf("no key: %v", err)
	}
	// The script's own check: a cost above the limit is a typed error reply.
	if _, err := scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{Limit: 2, Window: time.Minute, Cost: 3, Nonce: scripttest.Nonce(t)}); !errors.Is(err, vm1.ErrBadArg) {
		t.Fatalf("cost above limit: %v", err)
	}
}
