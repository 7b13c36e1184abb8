package safetycache_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/vm2/safetycache"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/redis/go-redis/v9"
)

// Service instances on different config generations race on the same entries: each
// writes its own generation's record over and over while all read. The newest
// generation always wins: a read never returns another generation's record, an
// accepted write is never followed by an older stamp, and at the end every entry
// holds the newest record.
func TestSafetyVersionStampRace(t *testing.T) {
	t.Parallel()
	const generations, keys, goroutines, rounds = 8, 10, 64, 40
	run := func(t *testing.T, rdb redis.Scripter, stored func(key string) (int64, []byte)) {
		ctx := context.Background()
		c, reg := safetytest.New(t, rdb, safetyredis.Options{CacheTimeout: 10 * time.Second})
		caches := make([]*safetycache.Cache, generations+1)
		for g := 1; g <= generations; g++ {
			p := safetytest.Policy
			p.Generation = int64(g)
			caches[g] = safetytest.NewCache(t, c, p)
		}
		var entries []vm2.SafetyVerdictKey
		for i := 0; i < keys; i++ {
			k, err := vm2.NewSafetyVerdictKey(safetytest.Digest("file-"+strconv.Itoa(i)), "cfg-1", "bundle-1")
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, k)
		}
		record := func(g int) safetyrecord.FileVerdict {
			return safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictReview, RuleIDs: []string{"gen-" + strconv.Itoa(g)}}
		}
		var written, stale atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := 0; w < goroutines; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				<-start
				g := w%generations + 1
				for r := 0; r < rounds; r++ {
					key := entries[(w+r)%keys]
					res, err := caches[g].SetVerdict(ctx, key, record(g))
					if err != nil {
						t.Error(err)
						return
					}
					switch res.Outcome {
					case safetycache.SetWritten:
						written.Add(1)
						if res.Stamp != int64(g) {
							t.Errorf("gen %d write stored stamp %d", g, res.Stamp)
						}
					case safetycache.SetStale:
						stale.Add(1)
						if res.Stamp <= int64(g) {
							t.Errorf("gen %d write refused for stamp %d", g, res.Stamp)
						}
					default:
						t.Errorf("outcome %s", res.Outcome)
					}
					got, hit, err := caches[g].GetVerdict(ctx, key)
					if err != nil {
						t.Error(err)
						return
					}
					if hit && !cmp.Equal(got, record(g)) {
						t.Errorf("gen %d read %v", g, got.RuleIDs)
					}
				}
			}(w)
		}
		close(start)
		wg.Wait()
		if written.Load()+stale.Load() != goroutines*rounds || stale.Load() == 0 {
			t.Fatalf("written %d + stale %d, want %d with some stale", written.Load(), stale.Load(), goroutines*rounds)
		}
		for _, key := range entries {
			stamp, value := stored(key.String())
			got, err := safetyrecord.DecodeVerdict(value)
			if stamp != generations || err != nil || !cmp.Equal(got, record(generations)) {
				t.Fatalf("%s holds stamp %d, %+v (%v)", key, stamp, got, err)
			}
			if _, hit, _ := caches[generations-1].GetVerdict(ctx, key); hit {
				t.Fatal("an older generation read the newest entry")
			}
		}
		if got := promtest.Sum(t, reg, "han_safety_cache_writes_total", map[string]string{"result": "stale"}); got != float64(stale.Load()) {
			t.Fatalf("stale writes counted %v, seen %d", got, stale.Load())
		}
	}
	t.Run("harness", func(t *testing.T) {
		h, sc, _ := scripttest.VM2Harness(t)
		run(t, sc, func(key string) (int64, []byte) {
			e := h.Keyspace()[key]
			n, _ := strconv.ParseInt(e.Hash["stamp"], 10, 64)
			return n, []byte(e.Hash["value"])
		})
	})
	t.Run("redis", func(t *testing.T) {
		srv, db0 := safetytest.StartRedis(t)
		run(t, srv.Client(vm2.DB0, func(o *redis.Options) { o.PoolSize = 32 }), func(key string) (int64, []byte) {
			v, err := db0.HMGet(context.Background(), key, "stamp", "value").Result()
			if err != nil || v[0] == nil || v[1] == nil {
				t.Fatalf("%s: %v %v", key, v, err)
			}
			n, _ := strconv.ParseInt(v[0].(string), 10, 64)
			return n, []byte(v[1].(string))
		})
	})
}

// warmSafety fills the four caches with n entries each and returns a check that
// reports how many of them are hits.
func warmSafety(t *testing.T, k *safetycache.Cache, n int) (fill func() error, hits func() int) {
	ctx := context.Background()
	type entry struct {
		set func() (safetycache.SetResult, error)
		get func() (bool, error)
	}
	var entries []entry
	for i := 0; i < n; i++ {
		s := strconv.Itoa(i)
		tk, _ := vm2.NewSafetyTextKey(safetytest.Digest("text "+s), "rules-1")
		vk, _ := vm2.NewSafetyVerdictKey(safetytest.Digest("file "+s), "cfg-1", "bundle-1")
		lk, _ := vm2.NewSafetyLinkKey(safetytest.Digest("https://example.com/"+s), "rules-1", "cfg-1")
		dk, _ := vm2.NewSafetyDNSKey(safetytest.Digest("host"+s+".example"), vm2.DNSRRTypeA)
		tr := safetyrecord.TextResult{Verdict: safetyrecord.VerdictMonitor, MonitorRuleIDs: []string{"m." + s}}
		fv := safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictAllow, RuleIDs: []string{"sig." + s}}
		lp := safetyrecord.LinkPolicy{Class: safetyrecord.LinkUnknown, Verdict: safetyrecord.VerdictAllow}
		da := safetyrecord.DNSAnswer{RRType: vm2.DNSRRTypeA, TTL: 10 * time.Minute, Addrs: []netip.Addr{netip.AddrFrom4([4]byte{10, 0, byte(i), 0})}}
		entries = append(entries,
			entry{func() (safetycache.SetResult, error) { return k.SetText(ctx, tk, tr) }, func() (bool, error) {
				got, hit, err := k.GetText(ctx, tk)
				return hit && cmp.Equal(got, tr), err
			}},
			entry{func() (safetycache.SetResult, error) { return k.SetVerdict(ctx, vk, fv) }, func() (bool, error) {
				got, hit, err := k.GetVerdict(ctx, vk)
				return hit && cmp.Equal(got, fv), err
			}},
			entry{func() (safetycache.SetResult, error) { return k.SetLink(ctx, lk, lp) }, func() (bool, error) {
				got, hit, err := k.GetLink(ctx, lk)
				return hit && cmp.Equal(got, lp), err
			}},
			entry{func() (safetycache.SetResult, error) { return k.SetDNS(ctx, dk, da) }, func() (bool, error) {
				got, hit, err := k.GetDNS(ctx, dk)
				return hit && got.Addrs[0] == da.Addrs[0] && got.TTL > 0 && got.TTL <= da.TTL, err
			}},
		)
	}
	fill = func() error {
		for _, e := range entries {
			if res, err := e.set(); err != nil || res.Outcome != safetycache.SetWritten {
				return fmt.Errorf("set: %+v %v", res, err)
			}
		}
		return nil
	}
	hits = func() int {
		n := 0
		for _, e := range entries {
			hit, err := e.get()
			if err != nil {
				t.Error(err)
			}
			if hit {
				n++
			}
		}
		return n
	}
	return fill, hits
}

// A crash with no persistence loses every entry: the caches read as misses (no
// errors), the scripts are loaded again on NOSCRIPT, and the callers' writes rebuild
// the cache.
func TestSafetyCacheLossAndRebuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, db0 := safetytest.StartRedis(t)
	c, reg := safetytest.New(t, srv.Client(vm2.DB0), safetyredis.Options{RetryInterval: 20 * time.Millisecond, CacheTimeout: 5 * time.Second})
	k := safetytest.NewCache(t, c, safetytest.Policy)
	fill, hits := warmSafety(t, k, 25)
	if err := fill(); err != nil {
		t.Fatal(err)
	}
	if n := hits(); n != 100 {
		t.Fatalf("%d of 100 hits after warming", n)
	}
	scripttest.AuditTTLs(t, db0, vm2.Keys)

	srv.Kill()
	srv.Restart()
	if n := db0.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("%d keys survived the crash", n)
	}
	loads := redistest.CommandCalls(t, db0, "script|load")
	// The first calls may find the pool's dead connections; the Client is back as
	// soon as Redis answers, and every entry is a miss, never an error.
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return hits() == 0 && !c.Degraded() }) {
		t.Fatal("the Client never came back after the restart")
	}
	if err := fill(); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if n := hits(); n != 100 {
		t.Fatalf("%d of 100 hits after the rebuild", n)
	}
	if got := redistest.CommandCalls(t, db0, "script|load"); got < loads+2 {
		t.Fatalf("SCRIPT LOAD ran %d times after the restart, want cache_get and cache_set reloaded", got-loads)
	}
	scripttest.AuditTTLs(t, db0, vm2.Keys)
	if got := promtest.Sum(t, reg, "han_safety_cache_lookups_total", map[string]string{"result": "hit"}); got < 200 {
		t.Fatalf("hits counted %v, want at least 200", got)
	}
	for _, kind := range safetyrecord.Kinds {
		if got := promtest.Value(t, reg, "han_safety_cache_lookups_total", map[string]string{"kind": string(kind), "result": "miss"}); got < 25 {
			t.Errorf("%s misses counted %v, want at least 25", kind, got)
		}
	}
}

// On real Redis a DNS answer keeps its own TTL up to 900 s, is capped above (and
// counted), and expires with its own TTL.
func TestSafetyDNSTTLCapOnRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, db0 := safetytest.StartRedis(t)
	c, reg := safetytest.New(t, srv.Client(vm2.DB0), safetyredis.Options{CacheTimeout: 5 * time.Second})
	k := safetytest.NewCache(t, c, safetytest.Policy)
	long, _ := vm2.NewSafetyDNSKey(safetytest.Digest("cdn.example"), vm2.DNSRRTypeAAAA)
	short, _ := vm2.NewSafetyDNSKey(safetytest.Digest("fast.example"), vm2.DNSRRTypeAAAA)
	a := safetyrecord.DNSAnswer{RRType: vm2.DNSRRTypeAAAA, TTL: 86400 * time.Second, Addrs: []netip.Addr{netip.MustParseAddr("2001:db8::5")}}
	if res, err := k.SetDNS(ctx, long, a); err != nil || !res.Capped || res.TTL != 900*time.Second {
		t.Fatalf("a day-long answer: %+v %v", res, err)
	}
	if pttl := db0.PTTL(ctx, long.String()).Val(); pttl > 900*time.Second || pttl < 899*time.Second {
		t.Fatalf("PTTL %v, want the 900 s cap", pttl)
	}
	a.TTL = 1500 * time.Millisecond
	if res, err := k.SetDNS(ctx, short, a); err != nil || res.Capped || res.TTL != a.TTL {
		t.Fatalf("a short answer: %+v %v", res, err)
	}
	got, hit, err := k.GetDNS(ctx, short)
	if err != nil || !hit || got.TTL <= 0 || got.TTL > a.TTL {
		t.Fatalf("read back: %+v %v %v", got, hit, err)
	}
	if !redistest.WaitFor(ctx, 3*time.Second, func() bool { _, hit, _ := k.GetDNS(ctx, short); return !hit }) {
		t.Fatal("the answer outlived its own TTL")
	}
	if got := promtest.Value(t, reg, "han_safety_dns_ttl_capped_total", nil); got != 1 {
		t.Fatalf("caps counted %v, want 1", got)
	}
}

// The largest record a key allows goes through Redis and back unchanged, binary
// bytes included; one byte more is refused before Redis; damaged values in Redis are
// ErrCorrupt, never a panic; over RESP2 and RESP3.
func TestSafetyMaxValueAndInvalidSerialization(t *testing.T) {
	t.Parallel()
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(protocol), func(t *testing.T) {
			ctx := context.Background()
			srv, db0 := safetytest.StartRedis(t)
			c, _ := safetytest.New(t, srv.Client(vm2.DB0, func(o *redis.Options) { o.Protocol = protocol }), safetyredis.Options{CacheTimeout: 5 * time.Second})
			k := safetytest.NewCache(t, c, safetytest.Policy)
			key, _ := vm2.NewSafetyTextKey(safetytest.Digest("big"), "rules-1")

			var largest safetyrecord.TextResult
			for n := 1; ; n++ {
				r := safetyrecord.TextResult{Verdict: safetyrecord.VerdictBlock}
				for i := 0; i < n; i++ {
					id := fmt.Sprintf("%064d", i)
					if i < safetyrecord.MaxRuleIDs {
						r.RuleIDs = append(r.RuleIDs, id)
					} else {
						r.MonitorRuleIDs = append(r.MonitorRuleIDs, id)
					}
				}
				if _, err := safetyrecord.EncodeText(r); err != nil {
					if !errors.Is(err, safetyrecord.ErrTooLarge) {
						t.Fatal(err)
					}
					if _, err := k.SetText(ctx, key, r); !errors.Is(err, safetyrecord.ErrTooLarge) {
						t.Fatalf("one id more: %v", err)
					}
					if db0.Exists(ctx, key.String()).Val() != 0 {
						t.Fatal("a refused record reached Redis")
					}
					break
				}
				largest = r
			}
			if res, err := k.SetText(ctx, key, largest); err != nil || res.Outcome != safetycache.SetWritten {
				t.Fatalf("largest: %+v %v", res, err)
			}
			if n := db0.HStrLen(ctx, key.String(), "value").Val(); n > vm2.SafetyTextMaxBytes || n < vm2.SafetyTextMaxBytes-66 {
				t.Fatalf("stored %d bytes; the limit is %d", n, vm2.SafetyTextMaxBytes)
			}
			if got, hit, err := k.GetText(ctx, key); err != nil || !hit || !cmp.Equal(got, largest) {
				t.Fatalf("largest read back: hit %v, %v", hit, err)
			}
			// Binary-safe: addresses full of zero bytes.
			dk, _ := vm2.NewSafetyDNSKey(safetytest.Digest("zero.example"), vm2.DNSRRTypeA)
			zeros := safetyrecord.DNSAnswer{RRType: vm2.DNSRRTypeA, TTL: time.Minute, Addrs: []netip.Addr{netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("10.0.0.0")}}
			if _, err := k.SetDNS(ctx, dk, zeros); err != nil {
				t.Fatal(err)
			}
			if got, hit, err := k.GetDNS(ctx, dk); err != nil || !hit || got.Addrs[0] != zeros.Addrs[0] || got.Addrs[1] != zeros.Addrs[1] {
				t.Fatalf("zero bytes: %+v %v %v", got, hit, err)
			}
			// Damaged values written behind the package's back.
			stamp := strconv.FormatInt(safetytest.Policy.Generation, 10)
			for name, v := range map[string]string{
				"garbage":             "\xc1\xc1",
				"JSON":                `{"verdict":"allow"}`,
				"truncated":           mustEncodeText(t)[:5],
				"above max_bytes":     string(make([]byte, vm2.SafetyTextMaxBytes+1)),
				"empty":               "",
				"4G-element array":    "\xdd\xff\xff\xff\xff",
				"another kind's data": string(mustEncodeVerdict(t)),
			} {
				if err := db0.HSet(ctx, key.String(), "stamp", stamp, "value", v).Err(); err != nil {
					t.Fatal(err)
				}
				if _, hit, err := k.GetText(ctx, key); hit || !errors.Is(err, safetyrecord.ErrCorrupt) {
					t.Errorf("%s: hit %v, %v", name, hit, err)
				}
			}
			// A value with no stamp beside it reads as absent.
			if err := db0.HDel(ctx, key.String(), "stamp").Err(); err != nil {
				t.Fatal(err)
			}
			if _, hit, err := k.GetText(ctx, key); hit || err != nil {
				t.Fatalf("no stamp: hit %v, %v", hit, err)
			}
			// A key of the wrong type is an error, not a panic and not a silent miss.
			if err := db0.Set(ctx, key.String(), "x", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := k.GetText(ctx, key); err == nil || c.Degraded() {
				t.Fatalf("WRONGTYPE: %v (degraded %v)", err, c.Degraded())
			}
		})
	}
}

func mustEncodeText(t *testing.T) string {
	b, err := safetyrecord.EncodeText(safetyrecord.TextResult{Verdict: safetyrecord.VerdictAllow, RuleIDs: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustEncodeVerdict(t *testing.T) []byte {
	b, err := safetyrecord.EncodeVerdict(safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictAllow})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
