package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/elangtest"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/elang/cache"
	"github.com/hanchat/luagen/services/elang/store"
	"github.com/prometheus/client_golang/prometheus"
)

func newCache(st *store.Store, o cache.Options) (*cache.Cache, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	return cache.New(st, o), reg
}

// get is Get for a valid key: an error fails the test.
func get(t *testing.T, c *cache.Cache, key string) ([]byte, bool) {
	t.Helper()
	v, ok, err := c.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return v, ok
}

func count(t *testing.T, reg *prometheus.Registry, kind, op, result string) float64 {
	return promtest.Value(t, reg, "elang_cache_operations_total", map[string]string{"store": kind, "op": op, "result": result})
}

// Get, Set, Delete and expiry, the same on Redis and on the local directory:
// catalog.version = 4 for 300 s, a short TTL that runs out, refused keys and
// TTLs, and the exact operation counts.
func TestCacheOnBothStores(t *testing.T) {
	for _, kind := range elangtest.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			pl := elangtest.Open(t, kind)
			c, reg := newCache(pl.Store(elangtest.Prefix(t, "cache")), cache.Options{})
			if c.Local() != (kind == "local") {
				t.Fatalf("Local() = %v", c.Local())
			}
			if _, ok := get(t, c, "catalog.version"); ok {
				t.Fatal("hit before any set")
			}
			if err := c.Set(ctx, "catalog.version", []byte("4"), 300*time.Second); err != nil {
				t.Fatal(err)
			}
			if v, ok := get(t, c, "catalog.version"); !ok || string(v) != "4" {
				t.Fatalf("get: %q %v", v, ok)
			}
			if ok, err := c.Delete(ctx, "catalog.version"); err != nil || !ok {
				t.Fatalf("delete: %v %v", ok, err)
			}
			if ok, err := c.Delete(ctx, "catalog.version"); err != nil || ok {
				t.Fatalf("delete again: %v %v", ok, err)
			}
			if _, ok := get(t, c, "catalog.version"); ok {
				t.Fatal("hit after delete")
			}
			// A short TTL runs out by itself.
			if err := c.Set(ctx, "short", []byte("x"), 150*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if _, ok := get(t, c, "short"); !ok {
				t.Fatal("a fresh entry is a miss")
			}
			polledHits := 0.0
			if !redistest.WaitFor(ctx, 5*time.Second, func() bool {
				_, ok := get(t, c, "short")
				if ok {
					polledHits++
				}
				return !ok
			}) {
				t.Fatal("an entry outlived its 150ms TTL by 5 s")
			}
			// Refused before any I/O.
			for _, bad := range []struct {
				key string
				ttl time.Duration
			}{{"report:42", time.Second}, {"", time.Second}, {"ok", 0}, {"ok", 31 * 24 * time.Hour}} {
				if err := c.Set(ctx, bad.key, []byte("v"), bad.ttl); !errors.Is(err, cache.ErrInvalid) {
					t.Errorf("set %q for %v: %v", bad.key, bad.ttl, err)
				}
			}
			if err := c.Set(ctx, "big", make([]byte, store.MaxValueBytes+1), time.Second); !errors.Is(err, cache.ErrInvalid) {
				t.Errorf("a value above the bound: %v", err)
			}
			if _, ok, err := c.Get(ctx, "report:42"); ok || !errors.Is(err, cache.ErrInvalid) {
				t.Errorf("get of an invalid key: %v %v", ok, err)
			}
			for _, w := range []struct {
				op, result string
				n          float64
			}{{"get", "hit", 2 + polledHits}, {"get", "invalid", 1}, {"set", "ok", 2}, {"set", "invalid", 5}, {"delete", "ok", 2}, {"get", "failure", 0}} {
				if got := count(t, reg, kind, w.op, w.result); got != w.n {
					t.Errorf("%s %s: %v, want %v", w.op, w.result, got, w.n)
				}
			}
			// Misses: before set, after delete, and the poll after expiry.
			if got := count(t, reg, kind, "get", "miss"); got != 3 {
				t.Errorf("get miss: %v, want 3", got)
			}
		})
	}
}

// Clear makes exactly this prefix's cache entries read as absent: not another
// prefix's (one nested in this one neither), not this prefix's locks. In the
// local store it removes the entry files in bounded batches; in Redis it lists
// and deletes nothing (no SCAN, KEYS or UNLINK: issue 21, SCAN listed every
// deployment's key names) but retires the prefix's cache generation in one
// call, and the retired entries stay, each until its TTL; an entry written
// after the clear reads.
func TestCacheClearTouchesOnlyThisPrefix(t *testing.T) {
	for _, kind := range elangtest.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			pl := elangtest.Open(t, kind)
			d := elangtest.Deployment(t, "clear")
			pa, err := d.Test()
			if err != nil {
				t.Fatal(err)
			}
			nested, err := elang.NewPrefix(d.String() + "eu:")
			if err == nil {
				nested, err = nested.Test()
			}
			if err != nil {
				t.Fatal(err)
			}
			stA := pl.Store(pa)
			a, _ := newCache(stA, cache.Options{ClearBatch: 100})
			b, _ := newCache(pl.Store(elangtest.Prefix(t, "other")), cache.Options{})
			n, _ := newCache(pl.Store(nested), cache.Options{})
			const entries = 1234
			for i := 0; i < entries; i++ {
				if err := a.Set(ctx, fmt.Sprintf("item.%d", i), []byte("v"), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 10; i++ {
				_ = b.Set(ctx, fmt.Sprintf("item.%d", i), []byte("b"), time.Hour)
				_ = n.Set(ctx, fmt.Sprintf("item.%d", i), []byte("n"), time.Hour)
			}
			const owner = "owner-cccccccccccccccc"
			if ok, _, err := stA.Acquire(ctx, "report:42", owner, time.Minute); err != nil || !ok {
				t.Fatalf("lock: %v %v", ok, err)
			}
			removed, err := a.Clear(ctx)
			wantRemoved := entries // the local store removes the files
			if kind == "redis" {
				wantRemoved = 0 // Redis retires them, removing none
			}
			if err != nil || removed != wantRemoved {
				t.Fatalf("clear removed %d (%v), want %d", removed, err, wantRemoved)
			}
			for i := 0; i < entries; i++ {
				if _, ok := get(t, a, fmt.Sprintf("item.%d", i)); ok {
					t.Fatalf("item.%d survived the clear", i)
				}
			}
			for i := 0; i < 10; i++ {
				if v, ok := get(t, b, fmt.Sprintf("item.%d", i)); !ok || string(v) != "b" {
					t.Fatalf("the other prefix lost item.%d", i)
				}
				if v, ok := get(t, n, fmt.Sprintf("item.%d", i)); !ok || string(v) != "n" {
					t.Fatalf("the nested prefix lost item.%d", i)
				}
			}
			if ok, _, _ := stA.Acquire(ctx, "report:42", "owner-dddddddddddddddd", time.Minute); ok {
				t.Fatal("the clear removed a lock")
			}
			if err := a.Set(ctx, "item.7", []byte("after"), time.Hour); err != nil {
				t.Fatal(err)
			}
			if v, ok := get(t, a, "item.7"); !ok || string(v) != "after" {
				t.Fatalf("an entry written after the clear: %q %v", v, ok)
			}
			if kind == "redis" {
				admin := pl.Server.Admin()
				for _, cmd := range []string{"flushdb", "flushall", "scan", "keys", "unlink", "del"} {
					if calls := redistest.CommandCalls(t, admin, cmd); calls != 0 {
						t.Fatalf("%s called %d times", cmd, calls)
					}
				}
				// A's 1234 retired entries (item.7 written again), its generation,
				// its lock, 10 + 10 of the other prefixes and their generations.
				if left := admin.DBSize(ctx).Val(); left != entries+1+1+20+2 {
					t.Fatalf("%d keys, want %d: the retired entries stay until their TTLs", left, entries+1+1+20+2)
				}
			}
		})
	}
}

// A Redis outage reads as misses, never as an error of Get: stopped, and hung
// (SIGSTOP) past the timeout. Each failure is counted; writes report it.
func TestCacheOutageReadsAsMiss(t *testing.T) {
	ctx := context.Background()
	pl := elangtest.Open(t, "redis")
	c, reg := newCache(pl.Store(elangtest.Prefix(t, "outage")), cache.Options{Timeout: 200 * time.Millisecond})
	if err := c.Set(ctx, "catalog.version", []byte("4"), 300*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, c, "catalog.version"); !ok {
		t.Fatal("miss before the outage")
	}

	pl.Server.Pause()
	start := time.Now()
	if _, ok, err := c.Get(ctx, "catalog.version"); ok || err != nil {
		t.Fatalf("get from a hung server: %v %v, want a miss", ok, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a Get on a hung server took %v with a 200ms timeout", took)
	}
	pl.Server.Resume()

	pl.Server.Stop()
	for i := 0; i < 5; i++ {
		if v, ok, err := c.Get(ctx, "catalog.version"); ok || v != nil || err != nil {
			t.Fatalf("get %d while stopped: %q %v %v, want a miss", i, v, ok, err)
		}
	}
	if err := c.Set(ctx, "catalog.version", []byte("5"), time.Minute); !errors.Is(err, cache.ErrUnavailable) {
		t.Fatalf("set while stopped: %v", err)
	}
	if _, err := c.Clear(ctx); !errors.Is(err, cache.ErrUnavailable) {
		t.Fatalf("clear while stopped: %v", err)
	}
	if got := promtest.Value(t, reg, "elang_cache_failures_total", map[string]string{"store": "redis", "op": "get"}); got != 6 {
		t.Fatalf("get failures %v, want 6 (1 hung + 5 stopped)", got)
	}
	if got := count(t, reg, "redis", "get", "failure"); got != 6 {
		t.Fatalf("get results failure %v, want 6", got)
	}

	// Back again (empty: no persistence): a miss, then hits, with no new failure.
	pl.Server.Restart()
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return c.Set(ctx, "catalog.version", []byte("6"), time.Minute) == nil }) {
		t.Fatal("no set succeeded after the restart")
	}
	if v, ok := get(t, c, "catalog.version"); !ok || string(v) != "6" {
		t.Fatalf("after the restart: %q %v", v, ok)
	}
	if got := promtest.Value(t, reg, "elang_cache_failures_total", map[string]string{"store": "redis", "op": "get"}); got != 6 {
		t.Fatalf("get failures after recovery %v, want still 6", got)
	}
}
