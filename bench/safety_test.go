package bench

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	luagenrt "github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/vm2/callerlimit"
	"github.com/hanchat/luagen/services/vm2/safetycache"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/redis/go-redis/v9"
)

// What the safety package adds to a cache read (a per-call timeout on its own
// goroutine, degraded-mode bookkeeping, record decoding and validation, metrics),
// side by side in one run on one server and one hit: go-redis EVALSHA_RO with
// prepared arguments, the generated cache_get wrapper, and safetycache.Cache.GetText.
// Rate limiting likewise: the generated safety_rate_limit wrapper and
// callerlimit.Limiter.Allow.
func BenchmarkSafetyCache(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	c := srv.Client(vm2.DB0, func(o *redis.Options) { o.PoolSize = benchClients })
	if err := luagenrt.Preload(ctx, c, vm2.AllScripts()...); err != nil {
		b.Fatal(err)
	}
	scripts, err := vm2.NewScripts(vm2.Clients{DB0: c})
	if err != nil {
		b.Fatal(err)
	}
	sc, err := safetyredis.New(c, safetyredis.Options{})
	if err != nil {
		b.Fatal(err)
	}
	k, err := safetycache.New(sc, safetytest.Policy)
	if err != nil {
		b.Fatal(err)
	}
	l, err := callerlimit.New(sc, map[string]callerlimit.Policy{"bench": {Limit: 1000000, Window: 24 * time.Hour}})
	if err != nil {
		b.Fatal(err)
	}
	ci := srv.Client(vm2.DB0, func(o *redis.Options) { o.PoolSize, o.ContextTimeoutEnabled = benchClients, true })
	sci, err := safetyredis.New(ci, safetyredis.Options{})
	if err != nil {
		b.Fatal(err)
	}
	kInline, err := safetycache.New(sci, safetytest.Policy)
	if err != nil {
		b.Fatal(err)
	}
	key, _ := vm2.NewSafetyTextKey(safetytest.Digest("bench"), "rules-1")
	rec := safetyrecord.TextResult{Verdict: safetyrecord.VerdictMonitor, RuleIDs: []string{"pii.phone", "pii.iban"}, MonitorRuleIDs: []string{"m.1"}}
	if _, err := k.SetText(ctx, key, rec); err != nil {
		b.Fatal(err)
	}
	rl, _ := vm2.NewSafetyRLServiceKey("bench-raw", 86400)
	keys := []string{key.String()}
	calls := []struct {
		name string
		call func() error
	}{
		{"cache-get/go-redis-EvalShaRO", func() error {
			return c.EvalShaRO(ctx, vm2.CacheGetSHA1, keys, safetytest.Policy.Generation).Err()
		}},
		{"cache-get/generated", func() error {
			_, err := scripts.CacheGet(ctx, key, vm2.CacheGetArgs{Stamp: safetytest.Policy.Generation})
			return err
		}},
		{"cache-get/safety-ContextTimeoutEnabled", func() error {
			_, hit, err := kInline.GetText(ctx, key)
			if !hit && err == nil {
				b.Fatal("miss")
			}
			return err
		}},
		{"cache-get/safety", func() error {
			_, hit, err := k.GetText(ctx, key)
			if !hit && err == nil {
				b.Fatal("miss")
			}
			return err
		}},
		{"rate-limit/generated", func() error {
			_, err := scripts.SafetyRateLimit(ctx, rl, vm2.SafetyRateLimitArgs{Limit: 1000000, Window: 24 * time.Hour, Cost: 1})
			return err
		}},
		{"rate-limit/safety", func() error {
			_, err := l.Allow(ctx, "bench", 1)
			return err
		}},
	}
	for _, cl := range calls {
		b.Run(cl.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := cl.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(cl.name+"/parallel", func(b *testing.B) {
			b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			var failures atomic.Int64
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if cl.call() != nil {
						failures.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
			if failures.Load() > 0 {
				b.Fatalf("%d calls failed", failures.Load())
			}
		})
	}
}
