package lock_test

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
	"github.com/hanchat/luagen/services/elang/lock"
	"github.com/prometheus/client_golang/prometheus"
)

// The lock's contract on Redis and on the local directory alike: exclusive,
// refresh and release only by the owner, a late owner (lease ran out, another
// took it) can neither release nor refresh, names such as report:42 work, and
// two prefixes never share a lock.
func TestLockOnBothStores(t *testing.T) {
	for _, kind := range elangtest.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			pl := elangtest.Open(t, kind)
			p := elangtest.Prefix(t, "lock")
			reg := prometheus.NewRegistry()
			l := lock.New(pl.Store(p), lock.Options{Registerer: reg})

			a := l.Lock("report:42", 30*time.Second)
			b := l.Lock("report:42", 30*time.Second)
			if ok, err := a.Acquire(ctx); err != nil || !ok {
				t.Fatalf("A acquire: %v %v", ok, err)
			}
			if ok, err := b.Acquire(ctx); err != nil || ok {
				t.Fatalf("B acquired A's lock: %v %v", ok, err)
			}
			var nh *lock.NotHeldError
			if err := b.Refresh(ctx); !errors.As(err, &nh) || nh.Outcome != elang.LockOutcomeOtherOwner {
				t.Fatalf("B refreshed A's lock: %v", err)
			}
			if err := b.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Fatalf("B released A's lock: %v", err)
			}
			if err := a.Refresh(ctx); err != nil {
				t.Fatalf("A refresh: %v", err)
			}
			if ok, _ := a.Acquire(ctx); !ok {
				t.Fatal("the owner could not acquire again")
			}
			// Another lock name and another prefix are other locks.
			if ok, _ := l.Lock("report:43", time.Second).Acquire(ctx); !ok {
				t.Fatal("report:43 is held by report:42's owner")
			}
			other := lock.New(pl.Store(elangtest.Prefix(t, "lock-other")), lock.Options{})
			if ok, _ := other.Lock("report:42", time.Second).Acquire(ctx); !ok {
				t.Fatal("another prefix shares report:42")
			}
			if err := a.Release(ctx); err != nil {
				t.Fatalf("A release: %v", err)
			}
			if err := a.Release(ctx); !errors.As(err, &nh) || nh.Outcome != elang.LockOutcomeExpired {
				t.Fatalf("A released twice: %v", err)
			}

			// A late owner: A's 200ms lease runs out, B takes the lock.
			a = l.Lock("report:42", 200*time.Millisecond)
			if ok, _ := a.Acquire(ctx); !ok {
				t.Fatal("A could not take the free lock")
			}
			if !redistest.WaitFor(ctx, 5*time.Second, func() bool { ok, _ := b.Acquire(ctx); return ok }) {
				t.Fatal("B never got the lock after A's 200ms lease")
			}
			if err := a.Release(ctx); !errors.As(err, &nh) || nh.Outcome != elang.LockOutcomeOtherOwner {
				t.Fatalf("late owner's release: %v", err)
			}
			if err := a.Refresh(ctx); !errors.As(err, &nh) || nh.Outcome != elang.LockOutcomeOtherOwner {
				t.Fatalf("late owner's refresh: %v", err)
			}
			if ok, _ := l.Lock("report:42", time.Second).Acquire(ctx); ok {
				t.Fatal("the late owner's calls freed B's lock")
			}
			if err := b.Release(ctx); err != nil {
				t.Fatalf("B release: %v", err)
			}
			if kind == "redis" {
				keys := pl.Client().Keys(ctx, "*").Val()
				for _, k := range keys {
					if strings.Contains(k, "report") {
						t.Errorf("key %q holds the lock name", k)
					}
				}
			}
			// Refused before any I/O.
			for _, bad := range []*lock.Lock{l.Lock("", time.Second), l.Lock("x", 0), l.Lock("x", 11*time.Minute), l.Lock(strings.Repeat("n", 513), time.Second)} {
				if _, err := bad.Acquire(ctx); !errors.Is(err, lock.ErrInvalid) {
					t.Errorf("an invalid lock: %v", err)
				}
			}
			if got := promtest.Value(t, reg, "elang_lock_operations_total", map[string]string{"store": kind, "op": "release", "result": "other_owner"}); got != 2 {
				t.Errorf("release other_owner counted %v, want 2", got)
			}
		})
	}
}

// Many goroutines race for one lock: never two holders at once, and exactly
// as many releases succeed as acquisitions did.
func TestLockRaceOnBothStores(t *testing.T) {
	for _, kind := range elangtest.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			pl := elangtest.Open(t, kind)
			l := lock.New(pl.Store(elangtest.Prefix(t, "race")), lock.Options{})
			const workers, attempts = 16, 40
			var holders, maxHolders, acquired, released, failures atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < attempts; i++ {
						k := l.Lock("report:42", 10*time.Second)
						ok, err := k.Acquire(ctx)
						if err != nil {
							failures.Add(1)
							continue
						}
						if !ok {
							continue
						}
						acquired.Add(1)
						n := holders.Add(1)
						for m := maxHolders.Load(); n > m && !maxHolders.CompareAndSwap(m, n); m = maxHolders.Load() {
						}
						holders.Add(-1)
						if k.Release(ctx) == nil {
							released.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if failures.Load() != 0 || maxHolders.Load() != 1 || acquired.Load() == 0 || released.Load() != acquired.Load() {
				t.Fatalf("failures %d, max holders %d, acquired %d, released %d", failures.Load(), maxHolders.Load(), acquired.Load(), released.Load())
			}
			t.Logf("%s: %d of %d attempts acquired", kind, acquired.Load(), workers*attempts)
		})
	}
}

// A Redis failure is reported as ErrUnavailable and counted: never false, never
// "held" from memory.
func TestLockFailuresAreReported(t *testing.T) {
	ctx := context.Background()
	pl := elangtest.Open(t, "redis")
	reg := prometheus.NewRegistry()
	l := lock.New(pl.Store(elangtest.Prefix(t, "fail")), lock.Options{Registerer: reg, Timeout: 300 * time.Millisecond})
	k := l.Lock("report:42", 30*time.Second)
	if ok, err := k.Acquire(ctx); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	pl.Server.Stop()
	if ok, err := k.Acquire(ctx); ok || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("acquire on a stopped server: %v %v", ok, err)
	}
	if err := k.Refresh(ctx); !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("refresh on a stopped server: %v", err)
	}
	if err := k.Release(ctx); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("release on a stopped server: %v", err)
	}
	if got := promtest.Sum(t, reg, "elang_lock_failures_total", map[string]string{"store": "redis"}); got != 3 {
		t.Fatalf("failures counted %v, want 3", got)
	}
}
