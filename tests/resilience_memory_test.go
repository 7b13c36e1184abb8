package tests

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/hanchat/luagen/services/vm2/callerlimit"
	"github.com/hanchat/luagen/services/vm2/safetycache"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/redis/go-redis/v9"
)

// pressureMaxMemory is far below any production size and about three times
// what an empty server takes, so that a few thousand keys make Redis evict.
const pressureMaxMemory = "maxmemory 3mb"

// pushRounds runs rounds of workers × perWorker calls of push (worker,
// index) until done reports true, at most maxRounds rounds; it reports
// whether done became true.
func pushRounds(maxRounds, workers, perWorker int, push func(w, i int), done func() bool) bool {
	for round := 0; round < maxRounds; round++ {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perWorker; i++ {
					push(w, round*perWorker+i)
				}
			}()
		}
		wg.Wait()
		if done() {
			return true
		}
	}
	return done()
}

// Seed 000 §9 "under memory pressure, eviction of idempotency creates no
// duplicate thanks to the PostgreSQL fallback" and §12 "memory pressure /
// eviction and no duplicate business side effect", on the generated VM1
// config (maxmemory-policy volatile-lru) with a small maxmemory: 100 calls
// complete, then rate-limit traffic from ever new subjects fills the memory
// until Redis evicts (evicted_keys > 0) and the idempotency records, the
// least recently used keys, go. No rate-limit call fails or degrades on the
// way. Retries of all 100 calls, concurrently, replay: from Redis where the
// record survived, from PostgreSQL where it was evicted; each call ran once
// and committed exactly one side effect. Every key still has a TTL (a key
// without one could never be evicted under volatile-lru).
func TestResilienceMemoryPressureVM1(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a := startACLInstance(t, "vm1", pressureMaxMemory)
	admin0 := a.adminDB(vm1.DB0)
	if p := infoField(t, admin0, "memory", "maxmemory_policy"); p != "volatile-lru" {
		t.Fatalf("maxmemory_policy %s, want the generated volatile-lru", p)
	}
	policy := ratelimit.Policy{vm1.APIRouteMessagesSend: {Algorithm: ratelimit.SlidingWindow, Degraded: degraded.FailClosed, Limits: []ratelimit.Limit{
		{Scope: ratelimit.ScopeUser, Limit: 10, Window: time.Minute},
		{Scope: ratelimit.ScopeIP, Limit: 100, Window: time.Minute},
	}}}
	s := newVM1Stack(t, a, nil, policy)

	const calls = 100
	reqs := make([]idempotency.Request, calls)
	outs := make([]idempotency.Outcome, calls)
	runs := make([]idemtest.Counter, calls)
	records := make([]string, calls)
	var wg sync.WaitGroup
	for i := range reqs {
		reqs[i] = idemtest.Request(t, vm1.IdemScopeMessageSend, fmt.Sprintf(`{"n":%d}`, i))
		rec, _ := vm1.NewAPIIdemKey(reqs[i].Scope, reqs[i].UserID, testHMACKey.Sum(reqs[i].Key))
		records[i] = rec.String()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if outs[i], err = s.keeper.Do(ctx, reqs[i], runs[i].Call(reqs[i].Key, idemtest.Created(), nil)); err != nil || outs[i].Replayed {
				t.Errorf("call %d: %+v %v", i, outs[i], err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// evictedRecords counts the idempotency records Redis no longer holds.
	evictedRecords := func() int {
		n := 0
		for _, k := range records {
			if admin0.Exists(ctx, k).Val() == 0 {
				n++
			}
		}
		return n
	}
	var pushed, failed atomic.Int64
	ok := pushRounds(40, 16, 200, func(w, i int) {
		subject := ratelimit.Subject{UserID: uuid.NewString(), IP: netip.AddrFrom4([4]byte{10, byte(w), byte(i >> 8), byte(i)})}
		d, err := s.limiter.Allow(ctx, subject, vm1.APIRouteMessagesSend)
		pushed.Add(1)
		if err != nil || !d.Allowed || d.Degraded {
			if failed.Add(1) <= 5 {
				t.Errorf("a rate-limit call under memory pressure: %+v %v", d, err)
			}
		}
	}, func() bool {
		return infoInt(t, admin0, "stats", "evicted_keys") > 0 && evictedRecords() >= calls/2
	})
	evicted := evictedRecords()
	t.Logf("%d rate-limit calls, %d keys evicted, %d of %d idempotency records among them",
		pushed.Load(), infoInt(t, admin0, "stats", "evicted_keys"), evicted, calls)
	if !ok {
		t.Fatalf("Redis evicted %d keys and %d idempotency records after %d calls", infoInt(t, admin0, "stats", "evicted_keys"), evicted, pushed.Load())
	}
	if failed.Load() != 0 {
		t.Fatalf("%d rate-limit calls failed under memory pressure", failed.Load())
	}

	// Every call retried at once: replayed, never run again.
	var fromRedis, fromDurable atomic.Int64
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := s.keeper.Do(ctx, reqs[i], runs[i].Call(reqs[i].Key, idemtest.Created(), nil))
			switch {
			case err != nil || !out.Replayed || !cmp.Equal(out.Response, outs[i].Response):
				t.Errorf("retry %d: %+v %v, want the stored answer", i, out, err)
			case out.Source == idempotency.SourceRedis:
				fromRedis.Add(1)
			case out.Source == idempotency.SourceDurable:
				fromDurable.Add(1)
			}
		}()
	}
	wg.Wait()
	if fromRedis.Load()+fromDurable.Load() != calls || fromDurable.Load() < int64(evicted) {
		t.Errorf("%d replays from Redis, %d from PostgreSQL; want %d in all, at least %d (the evicted) from PostgreSQL", fromRedis.Load(), fromDurable.Load(), calls, evicted)
	}
	rows, err := s.pool.Query(ctx, `SELECT idem_key, count(*) FROM side_effects GROUP BY idem_key`)
	if err != nil {
		t.Fatal(err)
	}
	effects := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		effects[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for i, req := range reqs {
		if runs[i].Runs.Load() != 1 || effects[req.Key] != 1 {
			t.Errorf("call %d ran %d times, %d side effects; want 1", i, runs[i].Runs.Load(), effects[req.Key])
		}
	}
	if len(effects) != calls {
		t.Errorf("side effects of %d keys, want %d", len(effects), calls)
	}
	scripttest.AuditTTLs(t, admin0, vm1.Keys)
}

// Seed 004 §5, §6 and §8: the generated VM2 config evicts any key
// (maxmemory-policy allkeys-lru), since every key of Message Safety's Redis
// is a rebuildable cache or limit window. Under pressure the oldest cache
// entries are evicted; their reads are misses, never errors; every write is
// still stored; the caller limiter still decides from Redis; every key left
// has its TTL.
func TestResilienceMemoryPressureVM2(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a := startACLInstance(t, "vm2", pressureMaxMemory)
	if p := infoField(t, a.admin, "memory", "maxmemory_policy"); p != "allkeys-lru" {
		t.Fatalf("maxmemory_policy %s, want the generated allkeys-lru", p)
	}
	rdb := a.userClientWith(t, "message_safety", vm2.DB0, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	// Generous timeouts: this test is about eviction, not latency.
	c, reg := safetytest.New(t, rdb, safetyredis.Options{CacheTimeout: 5 * time.Second, RateLimitTimeout: 5 * time.Second})
	k := safetytest.NewCache(t, c, safetytest.Policy)
	l, err := callerlimit.New(c, map[string]callerlimit.Policy{"api-backend": {Limit: 1000000, Window: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	keyOf := func(n int) vm2.SafetyTextKey {
		k, err := vm2.NewSafetyTextKey(safetytest.Digest(fmt.Sprintf("text %d", n)), "rules-7")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	result := safetyrecord.TextResult{Verdict: safetyrecord.VerdictAllow, RuleIDs: []string{"rule.a", "rule.b"}}
	const early = 50
	for n := 0; n < early; n++ {
		if res, err := k.SetText(ctx, keyOf(n), result); err != nil || res.Outcome != safetycache.SetWritten {
			t.Fatalf("set %d: %+v %v", n, res, err)
		}
	}
	var written, failed atomic.Int64
	var last atomic.Int64
	ok := pushRounds(40, 16, 200, func(w, i int) {
		n := early + i*16 + w
		res, err := k.SetText(ctx, keyOf(n), result)
		if err != nil || res.Outcome != safetycache.SetWritten {
			if failed.Add(1) <= 5 {
				t.Errorf("set %d under memory pressure: %+v %v", n, res, err)
			}
			return
		}
		written.Add(1)
		last.Store(int64(n))
		if i%50 == 0 {
			if d, err := l.Allow(ctx, "api-backend", 1); err != nil || !d.Allowed || d.Source != callerlimit.SourceRedis {
				if failed.Add(1) <= 5 {
					t.Errorf("the caller limit under memory pressure: %+v %v", d, err)
				}
			}
		}
	}, func() bool {
		if infoInt(t, a.admin, "stats", "evicted_keys") == 0 {
			return false
		}
		for n := 0; n < early; n++ {
			if a.admin.Exists(ctx, keyOf(n).String()).Val() != 0 {
				return false
			}
		}
		return true
	})
	t.Logf("%d entries written, %d keys evicted", written.Load(), infoInt(t, a.admin, "stats", "evicted_keys"))
	if !ok || failed.Load() != 0 {
		t.Fatalf("evicted %d keys after %d writes (%d failed); want the %d oldest entries evicted and no failure", infoInt(t, a.admin, "stats", "evicted_keys"), written.Load(), failed.Load(), early)
	}
	missesBefore := promtest.Sum(t, reg, "han_safety_cache_lookups_total", map[string]string{"kind": "text", "result": "miss"})
	for n := 0; n < early; n++ {
		if _, hit, err := k.GetText(ctx, keyOf(n)); hit || err != nil {
			t.Errorf("an evicted entry: hit %v, %v; want a miss", hit, err)
		}
	}
	if got := promtest.Sum(t, reg, "han_safety_cache_lookups_total", map[string]string{"kind": "text", "result": "miss"}); got != missesBefore+early {
		t.Errorf("misses counted %v, want %v", got, missesBefore+early)
	}
	if got, hit, err := k.GetText(ctx, keyOf(int(last.Load()))); err != nil || !hit || !cmp.Equal(got, result) {
		t.Errorf("the newest entry: %+v %v %v, want a hit", got, hit, err)
	}
	if c.Degraded() {
		t.Error("the client went degraded under memory pressure")
	}
	scripttest.AuditTTLs(t, a.admin, vm2.Keys)
}
