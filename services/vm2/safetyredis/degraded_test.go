package safetyredis_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/vm2/callerlimit"
	"github.com/hanchat/luagen/services/vm2/safetycache"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/hanchat/luagen/services/vm2/waker"
	"github.com/redis/go-redis/v9"
)

func healthOf(t *testing.T, h http.Handler) (int, safetyredis.Health) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health/safety-redis", nil))
	var out safetyredis.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("health body %q: %v", rec.Body.String(), err)
	}
	return rec.Code, out
}

// Redis stops in the middle of a workload of many goroutines and comes back empty.
// The callers never see an error: reads are misses, writes are dropped and counted
// exactly, the fail-closed caller is denied and the fail-open caller gets exactly
// its local limit; health says degraded (with HTTP 200, never a readiness failure).
// When Redis returns, the Client recovers by itself, the subscription is made again
// (and says so), and the caches warm again from the callers' own writes.
func TestSafetyRedisStoppedWhileCallersKeepGoing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, db0 := safetytest.StartRedis(t)
	const timeout = 150 * time.Millisecond
	c, reg := safetytest.New(t, srv.Client(vm2.DB0, safetytest.Impatient), safetyredis.Options{
		CacheTimeout: timeout, RateLimitTimeout: timeout, PublishTimeout: timeout, ProbeTimeout: timeout,
		RetryInterval: 50 * time.Millisecond,
	})
	k := safetytest.NewCache(t, c, safetytest.Policy)
	const localLimit = 40
	l, err := callerlimit.New(c, map[string]callerlimit.Policy{
		"open":   {Limit: 1000000, Window: time.Hour, Degraded: degraded.LocalLimit, LocalLimit: localLimit},
		"closed": {Limit: 1000000, Window: time.Hour, Degraded: degraded.FailClosed},
	})
	if err != nil {
		t.Fatal(err)
	}
	wk, err := waker.New(c)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := wk.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	safetytest.WaitWakeup(t, sub, safetyrecord.WakeSubscribed, 5*time.Second)
	if got := promtest.Value(t, reg, "han_safety_wakeup_subscribers", nil); got != 1 {
		t.Fatalf("subscribers gauge %v, want 1", got)
	}
	health := c.HealthHandler()
	if code, h := healthOf(t, health); code != http.StatusOK || h.Status != safetyredis.HealthOK {
		t.Fatalf("health before: %d %+v", code, h)
	}

	const workers, nkeys = 32, 64
	keys := make([]vm2.SafetyTextKey, nkeys)
	records := make([]safetyrecord.TextResult, nkeys)
	for i := range keys {
		keys[i], _ = vm2.NewSafetyTextKey(safetytest.Digest("message "+strconv.Itoa(i)), "rules-1")
		records[i] = safetyrecord.TextResult{Verdict: safetyrecord.VerdictAllow, RuleIDs: []string{"r." + strconv.Itoa(i)}}
	}
	var ops, hits, computed, dropped, openLocalAllowed, openLocalDenied, openRedis, closedDenied atomic.Int64
	var longest atomic.Int64
	timed := func(f func()) {
		start := time.Now()
		f()
		d := int64(time.Since(start))
		for {
			m := longest.Load()
			if d <= m || longest.CompareAndSwap(m, d) {
				return
			}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := (w*7 + n) % nkeys
				timed(func() {
					got, hit, err := k.GetText(ctx, keys[i])
					switch {
					case err != nil:
						t.Errorf("get: %v", err)
					case hit && !cmp.Equal(got, records[i]):
						t.Errorf("get %d: %+v", i, got)
					case hit:
						hits.Add(1)
					default:
						computed.Add(1) // a miss: compute (here: take the known result) and set
						res, err := k.SetText(ctx, keys[i], records[i])
						if err != nil {
							t.Errorf("set: %v", err)
						}
						if res.Outcome == safetycache.SetDropped {
							dropped.Add(1)
						}
					}
				})
				timed(func() {
					d, err := l.Allow(ctx, "open", 1)
					switch {
					case err != nil:
						t.Errorf("open: %v", err)
					case d.Source == callerlimit.SourceRedis:
						openRedis.Add(1)
					case d.Source == callerlimit.SourceLocal && d.Allowed:
						openLocalAllowed.Add(1)
					case d.Source == callerlimit.SourceLocal:
						openLocalDenied.Add(1)
					default:
						t.Errorf("open decided by %s", d.Source)
					}
				})
				timed(func() {
					d, err := l.Allow(ctx, "closed", 1)
					switch {
					case err != nil:
						t.Errorf("closed: %v", err)
					case d.Source == callerlimit.SourceClosed && !d.Allowed && d.RetryAfter > 0:
						closedDenied.Add(1)
					case d.Source != callerlimit.SourceRedis:
						t.Errorf("closed: %+v", d)
					}
				})
				ops.Add(1)
			}
		}(w)
	}
	stopWorkers := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopWorkers()

	// Warm: every entry is cached and read back.
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return hits.Load() >= 4*nkeys }) {
		t.Fatal("the cache never warmed")
	}

	// Redis stops; the callers keep going.
	srv.Stop()
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return c.Health(ctx).Status == safetyredis.HealthDegraded }) {
		t.Fatal("health never reported degraded")
	}
	atStop := ops.Load()
	if !redistest.WaitFor(ctx, 20*time.Second, func() bool {
		return ops.Load() >= atStop+2000 && openLocalDenied.Load() >= 100 && closedDenied.Load() >= 100 && dropped.Load() >= 100
	}) {
		t.Fatalf("the callers stalled during the outage: %d operations, %d local denials, %d closed denials, %d dropped writes",
			ops.Load()-atStop, openLocalDenied.Load(), closedDenied.Load(), dropped.Load())
	}
	if got := openLocalAllowed.Load(); got != localLimit {
		t.Fatalf("fail-open let %d through locally, want exactly its local limit %d", got, localLimit)
	}
	code, h := healthOf(t, health)
	if code != http.StatusOK || h.Status != safetyredis.HealthDegraded || h.Critical || h.Since.IsZero() || h.Reason == "" {
		t.Fatalf("health during the outage: %d %+v", code, h)
	}
	if res, err := wk.Publish(ctx, safetyrecord.Wakeup{Reason: safetyrecord.WakeTasksReady}); err != nil || res.Sent {
		t.Fatalf("publish during the outage: %+v %v", res, err)
	}
	if promtest.Value(t, reg, "han_safety_redis_degraded", nil) != 1 || promtest.Value(t, reg, "han_safety_wakeup_published_total", map[string]string{"result": "dropped"}) != 1 {
		t.Fatal("the outage is not in the metrics")
	}

	// Redis comes back empty: the Client recovers lazily and the caches warm again.
	srv.Restart()
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return c.Health(ctx).Status == safetyredis.HealthOK }) {
		t.Fatal("health never recovered")
	}
	safetytest.WaitWakeup(t, sub, safetyrecord.WakeSubscribed, 10*time.Second)
	atRestart, openAtRestart := hits.Load(), openRedis.Load()
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		cached := 0
		for _, key := range keys {
			if db0.Exists(ctx, key.String()).Val() == 1 {
				cached++
			}
		}
		return cached == nkeys && hits.Load() >= atRestart+4*nkeys && openRedis.Load() > openAtRestart
	}) {
		t.Fatalf("the caches did not warm again: %d hits since the restart", hits.Load()-atRestart)
	}
	res, err := wk.Publish(ctx, safetyrecord.Wakeup{Reason: safetyrecord.WakeTasksReady})
	if err != nil || !res.Sent || res.Receivers != 1 {
		t.Fatalf("publish after the restart: %+v %v", res, err)
	}
	safetytest.WaitWakeup(t, sub, safetyrecord.WakeTasksReady, 5*time.Second)

	stopWorkers()
	if got := promtest.Sum(t, reg, "han_safety_cache_writes_total", map[string]string{"result": "dropped"}); got != float64(dropped.Load()) {
		t.Fatalf("dropped writes counted %v, the callers saw %d", got, dropped.Load())
	}
	if got := promtest.Value(t, reg, "han_safety_rate_limit_decisions_total", map[string]string{"caller": "open", "decision": "allowed", "source": "local"}); got != localLimit {
		t.Fatalf("local allowances counted %v", got)
	}
	if got := promtest.Value(t, reg, "han_safety_rate_limit_decisions_total", map[string]string{"caller": "closed", "decision": "denied", "source": "closed"}); got != float64(closedDenied.Load()) {
		t.Fatalf("fail-closed denials counted %v, the callers saw %d", got, closedDenied.Load())
	}
	if promtest.Value(t, reg, "han_safety_redis_degraded", nil) != 0 || promtest.Value(t, reg, "han_safety_redis_degradations_total", nil) < 1 {
		t.Fatal("the recovery is not in the metrics")
	}
	// Not a speed claim: a bound far below the client's own dial timeout shows no
	// call waited on the dead server beyond its own timeout.
	if d := time.Duration(longest.Load()); d > 2*time.Second {
		t.Fatalf("a call took %v", d)
	}
	scripttest.AuditTTLs(t, db0, vm2.Keys)
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-sub.C():
		case <-deadline:
			t.Fatal("C still open after Close")
		}
	}
	if got := promtest.Value(t, reg, "han_safety_wakeup_subscribers", nil); got != 0 {
		t.Fatalf("subscribers gauge %v after Close, want 0", got)
	}
}

// A hung Redis (the process stopped with SIGSTOP: connections open, no answers)
// with a client whose own timeouts are 30 s, with and without go-redis's
// ContextTimeoutEnabled: every call still returns within its configured timeout,
// with the degraded answer; when Redis resumes, all is normal.
func TestSafetyHungRedisNoCallBlocksPastItsTimeout(t *testing.T) {
	t.Parallel()
	for _, contextTimeouts := range []bool{false, true} {
		t.Run("ContextTimeoutEnabled="+strconv.FormatBool(contextTimeouts), func(t *testing.T) {
			testHungRedis(t, contextTimeouts)
		})
	}
}

func testHungRedis(t *testing.T, contextTimeouts bool) {
	ctx := context.Background()
	srv, db0 := safetytest.StartRedis(t)
	patient := func(o *redis.Options) {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = 30*time.Second, 30*time.Second, 30*time.Second, 30*time.Second
		o.MaxRetries = -1
		o.ContextTimeoutEnabled = contextTimeouts
	}
	const timeout = 100 * time.Millisecond
	c, _ := safetytest.New(t, srv.Client(vm2.DB0, patient), safetyredis.Options{
		CacheTimeout: timeout, RateLimitTimeout: timeout, PublishTimeout: timeout, ProbeTimeout: timeout,
		RetryInterval: 200 * time.Millisecond,
	})
	k := safetytest.NewCache(t, c, safetytest.Policy)
	l, err := callerlimit.New(c, map[string]callerlimit.Policy{
		"open":   {Limit: 100, Window: time.Minute, Degraded: degraded.LocalLimit, LocalLimit: 5},
		"closed": {Limit: 100, Window: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	wk, err := waker.New(c)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := vm2.NewSafetyVerdictKey(safetytest.Digest("file"), "cfg-1", "bundle-1")
	verdict := safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictBlock, RuleIDs: []string{"sig.1"}}
	// The entry is written through a client without the 100 ms timeout (a
	// loaded machine may take longer), so c meets the hang healthy.
	setup, _ := safetytest.New(t, srv.Client(vm2.DB0), safetyredis.Options{CacheTimeout: 5 * time.Second})
	if res, err := safetytest.NewCache(t, setup, safetytest.Policy).SetVerdict(ctx, key, verdict); err != nil || res.Outcome != safetycache.SetWritten {
		t.Fatalf("%+v %v", res, err)
	}

	pid := safetytest.RedisPID(t, db0)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)

	var wg sync.WaitGroup
	var longest atomic.Int64
	var localAllowed atomic.Int64
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				start := time.Now()
				if _, hit, err := k.GetVerdict(ctx, key); hit || err != nil {
					t.Errorf("get on a hung Redis: hit %v, %v", hit, err)
				}
				if res, err := k.SetVerdict(ctx, key, verdict); err != nil || res.Outcome != safetycache.SetDropped {
					t.Errorf("set on a hung Redis: %+v %v", res, err)
				}
				if d, err := l.Allow(ctx, "closed", 1); err != nil || d.Allowed || d.Source != callerlimit.SourceClosed {
					t.Errorf("fail-closed on a hung Redis: %+v %v", d, err)
				}
				d, err := l.Allow(ctx, "open", 1)
				if err != nil || d.Source != callerlimit.SourceLocal {
					t.Errorf("fail-open on a hung Redis: %+v %v", d, err)
				}
				if d.Allowed {
					localAllowed.Add(1)
				}
				if res, err := wk.Publish(ctx, safetyrecord.Wakeup{Reason: safetyrecord.WakeTasksReady}); err != nil || res.Sent {
					t.Errorf("publish on a hung Redis: %+v %v", res, err)
				}
				if h := c.Health(ctx); h.Status != safetyredis.HealthDegraded || h.Reason != "timeout" {
					t.Errorf("health on a hung Redis: %+v", h)
				}
				el := int64(time.Since(start))
				for m := longest.Load(); el > m && !longest.CompareAndSwap(m, el); m = longest.Load() {
				}
			}
		}()
	}
	wg.Wait()
	// Six calls, each bounded by its 100 ms timeout: far below the client's 30 s.
	if d := time.Duration(longest.Load()); d > 5*time.Second {
		t.Fatalf("six calls took %v on a hung Redis", d)
	}
	if localAllowed.Load() != 5 {
		t.Fatalf("fail-open allowed %d locally, want its local limit 5", localAllowed.Load())
	}

	resume()
	if !redistest.WaitFor(ctx, 30*time.Second, func() bool { return c.Health(ctx).Status == safetyredis.HealthOK }) {
		t.Fatal("health never recovered")
	}
	// A read may still take longer than 100 ms on a loaded machine: wait for a hit.
	var got safetyrecord.FileVerdict
	var hit bool
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		got, hit, err = k.GetVerdict(ctx, key)
		return err == nil && hit
	}) || !cmp.Equal(got, verdict) {
		t.Fatalf("after resuming: %+v %v %v", got, hit, err)
	}
}

// Callers whose own deadline is shorter than the Client's timeouts, on a Redis
// that never answers: a call Redis has not answered by the caller's deadline is an
// outage, so the Client degrades, each caller gets its degraded answer (a miss, a
// dropped write, its rate limit's fail-open or fail-closed decision) rather than
// an error, and however many calls are made, at most MaxInFlight goroutines stay
// behind waiting on go-redis's 30 s timeouts.
func TestSafetyCallerDeadlineShorterThanTheTimeouts(t *testing.T) {
	for _, contextTimeouts := range []bool{false, true} {
		t.Run("ContextTimeoutEnabled="+strconv.FormatBool(contextTimeouts), func(t *testing.T) {
			addr := redistest.Hung(t)
			rdb := redis.NewClient(&redis.Options{
				Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
				DialTimeout: 30 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, PoolTimeout: 30 * time.Second,
				ContextTimeoutEnabled: contextTimeouts,
			})
			t.Cleanup(func() { _ = rdb.Close() })
			const maxInFlight = 4
			c, reg := safetytest.New(t, rdb, safetyredis.Options{
				CacheTimeout: time.Second, RateLimitTimeout: time.Second,
				RetryInterval: time.Millisecond, // nearly every call tries the silent Redis
				MaxInFlight:   maxInFlight,
			})
			k := safetytest.NewCache(t, c, safetytest.Policy)
			l, err := callerlimit.New(c, map[string]callerlimit.Policy{
				"open":   {Limit: 100, Window: time.Minute, Degraded: degraded.LocalLimit, LocalLimit: 5},
				"closed": {Limit: 100, Window: time.Minute},
			})
			if err != nil {
				t.Fatal(err)
			}
			key, _ := vm2.NewSafetyVerdictKey(safetytest.Digest("file"), "cfg-1", "bundle-1")
			verdict := safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictBlock, RuleIDs: []string{"sig.1"}}
			before := runtime.NumGoroutine()

			var localAllowed, closedLate atomic.Int64
			// late reports a call whose 20 ms had run out before it started (a
			// loaded machine can pause a goroutine that long): the documented
			// error of a ctx that had already ended, not a degraded decision.
			late := func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
			callers := func(n int) {
				var wg sync.WaitGroup
				for g := 0; g < n; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < 5; i++ {
							// Each call gets a 20 ms deadline of its own.
							ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
							if _, hit, err := k.GetVerdict(ctx, key); hit || err != nil && !late(err) {
								t.Errorf("get: hit %v, %v", hit, err)
							}
							cancel()
							ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
							if res, err := k.SetVerdict(ctx, key, verdict); err != nil && !late(err) || err == nil && res.Outcome != safetycache.SetDropped {
								t.Errorf("set: %+v %v", res, err)
							}
							cancel()
							ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
							if d, err := l.Allow(ctx, "closed", 1); late(err) {
								closedLate.Add(1)
							} else if err != nil || d.Allowed || d.Source != callerlimit.SourceClosed {
								t.Errorf("fail-closed: %+v %v", d, err)
							}
							cancel()
							ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
							d, err := l.Allow(ctx, "open", 1)
							if err != nil && !late(err) || err == nil && d.Source != callerlimit.SourceLocal {
								t.Errorf("fail-open: %+v %v", d, err)
							}
							if d.Allowed {
								localAllowed.Add(1)
							}
							cancel()
						}
					}()
				}
				wg.Wait()
			}
			callers(1) // one caller after another...
			if !c.Degraded() {
				t.Fatal("the Client did not degrade when Redis answered no caller in time")
			}
			if h := c.Health(context.Background()); h.Status != safetyredis.HealthDegraded || h.Reason != "timeout" {
				t.Fatalf("health: %+v", h)
			}
			callers(50) // ...and many at once
			if n := localAllowed.Load(); n != 5 {
				t.Fatalf("fail-open allowed %d locally, want its local limit 5", n)
			}
			if got, want := promtest.Value(t, reg, "han_safety_rate_limit_decisions_total", map[string]string{"caller": "closed", "decision": "denied", "source": "closed"}), float64(255-closedLate.Load()); got != want {
				t.Fatalf("fail-closed decisions %v, want %v (255 calls, %d late)", got, want, closedLate.Load())
			}
			// The calls still waiting for the silent Redis are at most MaxInFlight
			// (none when go-redis ends them at the deadline itself).
			bound := before + maxInFlight
			if contextTimeouts {
				bound = before
			}
			if !redistest.WaitFor(context.Background(), 5*time.Second, func() bool { return runtime.NumGoroutine() <= bound }) {
				t.Fatalf("%d goroutines, %d before the calls; want at most %d more", runtime.NumGoroutine(), before, bound-before)
			}
		})
	}
}
