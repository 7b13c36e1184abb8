package cache_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/elangtest"
	"github.com/hanchat/luagen/services/elang/cache"
	"github.com/hanchat/luagen/services/elang/lock"
)

// BenchmarkElangCacheAndLock: a cache hit and a lock acquire+release through
// the services, on Redis and on the local directory, beside a plain go-redis
// GET of the same key on the same client, in one run.
func BenchmarkElangCacheAndLock(b *testing.B) {
	ctx := context.Background()
	red := elangtest.Open(b, "redis")
	loc := elangtest.Open(b, "local")
	p := elangtest.Prefix(b, "bench")
	stores := map[string]*cache.Cache{}
	lockers := map[string]*lock.Locker{}
	for _, pl := range []*elangtest.Place{red, loc} {
		st := pl.Store(p)
		stores[pl.Kind] = cache.New(st, cache.Options{})
		lockers[pl.Kind] = lock.New(st, lock.Options{})
		if err := stores[pl.Kind].Set(ctx, "catalog.version", []byte("4"), time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	key := p.String() + "cache:catalog.version"
	b.Run("get/go-redis-GET", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			// The stored entry is "<generation>:4".
			if v, err := red.Client().Get(ctx, key).Result(); err != nil || !strings.HasSuffix(v, ":4") {
				b.Fatal(v, err)
			}
		}
	})
	for _, kind := range elangtest.Kinds {
		b.Run("get/cache-"+kind, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if v, ok, err := stores[kind].Get(ctx, "catalog.version"); !ok || err != nil || string(v) != "4" {
					b.Fatal(v, ok, err)
				}
			}
		})
	}
	for _, kind := range elangtest.Kinds {
		b.Run("lock/acquire+release-"+kind, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				l := lockers[kind].Lock("report:42", 30*time.Second)
				if ok, err := l.Acquire(ctx); !ok || err != nil {
					b.Fatal(ok, err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
