package coord_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	luagenrt "github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/vm1/coord"
	"github.com/redis/go-redis/v9"
)

func coordDelivery(t *testing.T) (coord.Name, string) {
	t.Helper()
	id := uuid.NewString()
	n, err := coord.Delivery(id)
	if err != nil {
		t.Fatal(err)
	}
	fence, _ := vm1.NewCoordFenceDeliveryKey(id)
	return n, fence.String()
}

// On the harness clock: the lease ends exactly at its TTL; the late owner can
// neither extend nor release, and tells "expired" from "held by another owner";
// the next holder's fence is larger.
func TestCoordHarnessExpiryAndLateOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	l := coord.New(scripts)
	clock := h.Clock()
	name, fenceKey := coordDelivery(t)

	a, err := l.Obtain(ctx, name, coord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Fence() != scripttest.T0.UnixMicro() || a.TTL() != 30*time.Second {
		t.Fatalf("first fence %d (want Redis time in µs %d), TTL %v", a.Fence(), scripttest.T0.UnixMicro(), a.TTL())
	}
	ks := h.Keyspace()
	if e := ks[name.Key()]; e.TTL != 30*time.Second || e.String == "" {
		t.Fatalf("lock key %+v, want an owner token with TTL 30s", e)
	}
	if e := ks[fenceKey]; e.String != strconv.FormatInt(a.Fence(), 10) || e.TTL != vm1.CoordFenceDeliveryTTL {
		t.Fatalf("fence key %+v, want %d with TTL %v", e, a.Fence(), vm1.CoordFenceDeliveryTTL)
	}

	_, err = l.Obtain(ctx, name, coord.Options{})
	var no *coord.NotObtainedError
	if !errors.Is(err, coord.ErrNotObtained) || !errors.As(err, &no) || no.HolderTTL != 30*time.Second {
		t.Fatalf("second owner: %v", err)
	}
	clock.Advance(30 * time.Second)
	if _, err := l.Obtain(ctx, name, coord.Options{}); !errors.Is(err, coord.ErrNotObtained) {
		t.Fatalf("at exactly 30 s the lease still runs: %v", err)
	}
	clock.Advance(time.Millisecond)
	if err := a.Extend(ctx); !errors.Is(err, coord.ErrExpired) || errors.Is(err, coord.ErrHeldByOther) {
		t.Fatalf("extend after expiry: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, coord.ErrExpired) {
		t.Fatalf("release after expiry: %v", err)
	}

	b, err := l.Obtain(ctx, name, coord.Options{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if b.Fence() != clock.Now().UnixMicro() || b.Fence() <= a.Fence() {
		t.Fatalf("second fence %d, first %d", b.Fence(), a.Fence())
	}
	held := h.Keyspace()[name.Key()]
	if err := a.Extend(ctx); !errors.Is(err, coord.ErrHeldByOther) || errors.Is(err, coord.ErrExpired) {
		t.Fatalf("late owner extends: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, coord.ErrHeldByOther) {
		t.Fatalf("late owner releases: %v", err)
	}
	if got := h.Keyspace()[name.Key()]; got.String != held.String || got.TTL != held.TTL {
		t.Fatalf("the late owner changed the holder's lock: %+v -> %+v", held, got)
	}
	clock.Advance(5 * time.Second)
	if err := b.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if ttl := h.Keyspace()[name.Key()].TTL; ttl != 10*time.Second {
		t.Fatalf("extended lease %v, want the full 10s again", ttl)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Keyspace()[name.Key()]; ok {
		t.Fatal("released lock still there")
	}
	if err := b.Release(ctx); !errors.Is(err, coord.ErrExpired) {
		t.Fatalf("second release: %v", err)
	}
}

// Fencing tokens never go down for a lock name: +1 while the clock stands still
// or runs backwards, Redis time in µs once the counter expired.
func TestCoordHarnessFenceNeverGoesDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	l := coord.New(scripts)
	clock := h.Clock()
	name, err := coord.SettingsRefresh("api-1")
	if err != nil {
		t.Fatal(err)
	}
	take := func() int64 {
		t.Helper()
		lk, err := l.Obtain(ctx, name, coord.Options{TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := lk.Release(ctx); err != nil {
			t.Fatal(err)
		}
		return lk.Fence()
	}
	var got []int64
	for i := 0; i < 4; i++ {
		got = append(got, take())
	}
	clock.Advance(-time.Hour) // the clock jumps back; the counter does not
	got = append(got, take())
	base := scripttest.T0.UnixMicro()
	if want := []int64{base, base + 1, base + 2, base + 3, base + 4}; !slices.Equal(got, want) {
		t.Fatalf("fences %v, want %v", got, want)
	}
	// The counter lives 24 h after the last acquire; afterwards the clock floor
	// takes over, and it is past every token given.
	clock.Advance(time.Hour + vm1.CoordFenceSettingsRefreshTTL + time.Millisecond)
	if f := take(); f != clock.Now().UnixMicro() || f <= got[len(got)-1] {
		t.Fatalf("fence after the counter expired: %d", f)
	}
}

// The script refuses a fence key of another lock; Obtain refuses bad options and
// names; nothing is written.
func TestCoordHarnessBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, sc, scripts := scripttest.VM1Harness(t)
	l := coord.New(scripts)
	lock, _ := vm1.NewCoordLockDeliveryKey(uuid.NewString())
	otherFence, _ := vm1.NewCoordFenceDeliveryKey(uuid.NewString())
	_, err := scripts.LockAcquire(ctx, lock, otherFence, vm1.LockAcquireArgs{Owner: scripttest.Nonce(t), LockTTL: time.Second})
	if !errors.Is(err, vm1.ErrBadArg) {
		t.Fatalf("a fence of another lock: %v", err)
	}
	if _, err := coord.SafetyRecovery("task:*"); !errors.Is(err, luagenrt.ErrInvalidKeyPart) {
		t.Fatalf("a forging task id: %v", err)
	}
	if _, err := coord.SettingsRefresh("api 1"); !errors.Is(err, luagenrt.ErrInvalidKeyPart) {
		t.Fatalf("an instance with a space: %v", err)
	}
	runs := len(sc.Results())
	name, _ := coordDelivery(t)
	for _, o := range []coord.Options{
		{TTL: 31 * time.Second},
		{TTL: -time.Second},
		{TTL: time.Second, ExtendEvery: time.Second},
		{RetryInterval: -1},
	} {
		if _, err := l.Obtain(ctx, name, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := l.Obtain(ctx, coord.Name{}, coord.Options{}); err == nil {
		t.Error("an empty Name was accepted")
	}
	if n := len(sc.Results()); n != runs {
		t.Fatalf("refused input reached %d script runs", n-runs)
	}
	if ks := h.Keyspace(); len(ks) != 0 {
		t.Fatalf("refused calls wrote %v", ks)
	}
}

// On real Redis: a lease of 50 ms runs out; the old owner gets ErrExpired, then
// ErrHeldByOther once someone else holds the lock, which it cannot touch.
func TestCoordLockExpiryAndLateOwnerOnRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, scripts, _ := scripttest.VM1(t)
	db1 := srv.Client(vm1.DB1)
	l := coord.New(scripts)
	name, err := coord.SafetyRecovery(uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.Obtain(ctx, name, coord.Options{TTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// PTTL -2: the lease has already run out (a loaded machine can take 50 ms
	// to get here), which a key without a TTL never does.
	if ttl := db1.PTTL(ctx, name.Key()).Val(); ttl == -1 || ttl == 0 || ttl > 50*time.Millisecond {
		t.Fatalf("lease %v, want at most 50ms", ttl)
	}
	if !redistest.WaitFor(ctx, 2*time.Second, func() bool { return db1.Exists(ctx, name.Key()).Val() == 0 }) {
		t.Fatal("the lease never ran out")
	}
	if err := a.Extend(ctx); !errors.Is(err, coord.ErrExpired) {
		t.Fatalf("extend after expiry: %v", err)
	}
	b, err := l.Obtain(ctx, name, coord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Fence() <= a.Fence() {
		t.Fatalf("fence went down: %d after %d", b.Fence(), a.Fence())
	}
	owner := db1.Get(ctx, name.Key()).Val()
	if err := a.Extend(ctx); !errors.Is(err, coord.ErrHeldByOther) {
		t.Fatalf("late owner extends: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, coord.ErrHeldByOther) {
		t.Fatalf("late owner releases: %v", err)
	}
	if got := db1.Get(ctx, name.Key()).Val(); got != owner {
		t.Fatal("the late owner changed the holder's lock")
	}
	if ttl := db1.PTTL(ctx, name.Key()).Val(); ttl <= 29*time.Second {
		t.Fatalf("the holder's lease is %v, want the 30s it got", ttl)
	}
	scripttest.AuditTTLs(t, db1, vm1.Keys)
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	scripttest.AuditTTLs(t, db1, vm1.Keys)
}

// Many goroutines contend for one lock: at most one holds it at any time, every
// acquisition is counted exactly, and the fencing tokens, in the order the
// holders got them, strictly increase.
func TestCoordFencingUnderContention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, scripts, _ := scripttest.VM1(t)
	db1 := srv.Client(vm1.DB1)
	l := coord.New(scripts)
	id := uuid.NewString()
	name, _ := coord.Delivery(id)
	fenceKey, _ := vm1.NewCoordFenceDeliveryKey(id)

	const workers, rounds = 32, 25
	var (
		mu        sync.Mutex
		fences    []int64
		inside    atomic.Int32
		overlaps  atomic.Int32
		refusals  atomic.Int64
		wg        sync.WaitGroup
		start     = make(chan struct{})
		deadline  = time.Now().Add(60 * time.Second)
		obtainCtx = context.Background()
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for r := 0; r < rounds; {
				if time.Now().After(deadline) {
					t.Error("a worker starved")
					return
				}
				lk, err := l.Obtain(obtainCtx, name, coord.Options{TTL: 5 * time.Second})
				if errors.Is(err, coord.ErrNotObtained) {
					refusals.Add(1)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				mu.Lock()
				fences = append(fences, lk.Fence())
				mu.Unlock()
				inside.Add(-1)
				if err := lk.Release(ctx); err != nil {
					t.Error(err)
					return
				}
				r++
			}
		}()
	}
	close(start)
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Fatalf("%d acquisitions overlapped another holder", overlaps.Load())
	}
	if len(fences) != workers*rounds {
		t.Fatalf("%d acquisitions, want exactly %d", len(fences), workers*rounds)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d: %d after %d, want strictly increasing", i, fences[i], fences[i-1])
		}
	}
	if refusals.Load() == 0 {
		t.Fatal("no attempt was ever refused: the goroutines did not contend")
	}
	if got := db1.Get(ctx, fenceKey.String()).Val(); got != strconv.FormatInt(fences[len(fences)-1], 10) {
		t.Fatalf("fence counter %s, want the last token %d", got, fences[len(fences)-1])
	}
	if db1.Exists(ctx, name.Key()).Val() != 0 {
		t.Fatal("the lock is still held after every release")
	}
	scripttest.AuditTTLs(t, db1, vm1.Keys)
}

// Obtain with RetryInterval waits for the holder's lease to end; when its
// context ends first, the error says both "not obtained" and why it stopped.
func TestCoordObtainRetriesUntilTheLeaseEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, scripts, _ := scripttest.VM1(t)
	l := coord.New(scripts)
	name, _ := coordDelivery(t)
	a, err := l.Obtain(ctx, name, coord.Options{TTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err = l.Obtain(short, name, coord.Options{RetryInterval: 5 * time.Millisecond})
	if !errors.Is(err, coord.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("retry past the context: %v", err)
	}
	long, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	b, err := l.Obtain(long, name, coord.Options{RetryInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("retry until the lease ended: %v", err)
	}
	if b.Fence() <= a.Fence() {
		t.Fatalf("fence went down: %d after %d", b.Fence(), a.Fence())
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Do keeps a 200 ms lease alive for as long as the work runs (five leases and
// more), then releases the lock.
func TestCoordDoExtendsWhileTheWorkRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, scripts, _ := scripttest.VM1(t)
	db1 := srv.Client(vm1.DB1)
	l := coord.New(scripts)
	name, _ := coordDelivery(t)
	const ttl = 200 * time.Millisecond
	var fence int64
	err := l.Do(ctx, name, coord.Options{TTL: ttl, ExtendEvery: 50 * time.Millisecond}, func(ctx context.Context, lk *coord.Lock) error {
		fence = lk.Fence()
		owner := db1.Get(ctx, name.Key()).Val()
		start := time.Now()
		held := redistest.WaitFor(ctx, 5*time.Second, func() bool {
			if ctx.Err() != nil || db1.Get(ctx, name.Key()).Val() != owner {
				t.Errorf("lost the lock %v into the work (ctx: %v)", time.Since(start), context.Cause(ctx))
				return true
			}
			return time.Since(start) > 5*ttl
		})
		if !held {
			t.Error("the work never finished")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fence == 0 {
		t.Fatal("the work saw no fencing token")
	}
	if db1.Exists(ctx, name.Key()).Val() != 0 {
		t.Fatal("Do did not release the lock")
	}
	scripttest.AuditTTLs(t, db1, vm1.Keys)
}

// Do cancels the work's context as soon as the lease is lost, with a cause that
// says how, and returns it; a lock held by someone else is not obtained and the
// work never runs.
func TestCoordDoCancelsTheWorkWhenTheLeaseIsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		lose func(t *testing.T, srv *redistest.Server, db1 *redis.Client, key string)
		want error
	}{
		{"taken over", func(t *testing.T, _ *redistest.Server, db1 *redis.Client, key string) {
			// Test-only: as if the lease had run out and another owner took it.
			if err := db1.Set(ctx, key, "other-owner-token-0123456789", 30*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}, coord.ErrHeldByOther},
		{"expired", func(t *testing.T, _ *redistest.Server, db1 *redis.Client, key string) {
			if err := db1.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}, coord.ErrExpired},
		{"redis unreachable", func(t *testing.T, srv *redistest.Server, _ *redis.Client, _ string) {
			srv.Kill()
		}, coord.ErrExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, scripts, _ := scripttest.VM1(t)
			db1 := srv.Client(vm1.DB1)
			l := coord.New(scripts)
			name, _ := coordDelivery(t)
			const ttl = 300 * time.Millisecond
			var cause error
			err := l.Do(ctx, name, coord.Options{TTL: ttl, ExtendEvery: 50 * time.Millisecond}, func(work context.Context, lk *coord.Lock) error {
				deadline := lk.Deadline()
				tc.lose(t, srv, db1, name.Key())
				if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return work.Err() != nil }) {
					t.Fatal("the work's context was never cancelled")
				}
				// Lost within one extension period, or (unreachable) at the
				// lease's deadline: never noticeably after it. The bound leaves a
				// loaded machine a second (340 ms late was seen with 2 busy cores)
				// and still fails a cancel that waits for a client timeout (3 s).
				if late := time.Since(deadline); late > ttl+time.Second {
					t.Errorf("cancelled %v after the lease's deadline", late)
				}
				cause = context.Cause(work)
				return work.Err()
			})
			if !errors.Is(cause, tc.want) || !errors.Is(err, tc.want) || !errors.Is(err, context.Canceled) {
				t.Fatalf("cause %v, Do returned %v; want %v", cause, err, tc.want)
			}
			if tc.want == coord.ErrHeldByOther {
				if got := db1.Get(ctx, name.Key()).Val(); got != "other-owner-token-0123456789" {
					t.Fatalf("Do touched the new owner's lock: %q", got)
				}
			}
		})
	}

	t.Run("not obtained", func(t *testing.T) {
		_, scripts, _ := scripttest.VM1(t)
		l := coord.New(scripts)
		name, _ := coordDelivery(t)
		held, err := l.Obtain(ctx, name, coord.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		err = l.Do(ctx, name, coord.Options{}, func(context.Context, *coord.Lock) error { ran = true; return nil })
		if !errors.Is(err, coord.ErrNotObtained) || ran {
			t.Fatalf("Do on a held lock: %v (work ran: %v)", err, ran)
		}
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A work function that panics, with the panic recovered further up (as net/http
// does): Do stops extending the lease, releases the lock before the panic goes
// on, and leaves no goroutine behind, so the lock can be obtained at once.
func TestCoordDoReleasesTheLockWhenTheWorkPanics(t *testing.T) {
	ctx := context.Background()
	for _, on := range []string{"harness", "redis"} {
		t.Run(on, func(t *testing.T) {
			var scripts *vm1.Scripts
			var exists func(key string) bool
			if on == "harness" {
				h, _, s := scripttest.VM1Harness(t)
				scripts = s
				exists = func(key string) bool { _, ok := h.Keyspace()[key]; return ok }
			} else {
				srv, s, _ := scripttest.VM1(t)
				scripts = s
				db1 := srv.Client(vm1.DB1)
				exists = func(key string) bool { return db1.Exists(ctx, key).Val() == 1 }
			}
			l := coord.New(scripts)
			name, _ := coordDelivery(t)
			before := runtime.NumGoroutine()
			extended := make(chan struct{})
			recovered := func() (p any) {
				defer func() { p = recover() }()
				_ = l.Do(ctx, name, coord.Options{TTL: 30 * time.Second, ExtendEvery: time.Millisecond}, func(work context.Context, lk *coord.Lock) error {
					first := lk.Deadline()
					// Panic only once the lease is being extended.
					if !redistest.WaitFor(work, 5*time.Second, func() bool { return lk.Deadline().After(first) }) {
						t.Error("the lease was never extended")
					}
					close(extended)
					panic("work failed")
				})
				return nil
			}()
			if recovered != "work failed" {
				t.Fatalf("recovered %v, want the work's panic to go on up", recovered)
			}
			<-extended
			if exists(name.Key()) {
				t.Fatal("the lock is still held after the panicking Do returned")
			}
			lk, err := l.Obtain(ctx, name, coord.Options{})
			if err != nil {
				t.Fatalf("obtain right after the panicking Do: %v", err)
			}
			if err := lk.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
				t.Fatalf("%d goroutines after the panicking Do, %d before", runtime.NumGoroutine(), before)
			}
		})
	}
}
