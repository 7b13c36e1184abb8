package bench

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	luagenrt "github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/scriptmetrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// BenchmarkMetricsOverhead compares, in one run on one redis-server, the
// generated rate_limit_fixed wrapper without an Observer ("off", the default)
// and with scriptmetrics ("on": a call counter, a latency histogram, an error
// counter), from 1 caller (ns/op, allocs/op) and 50 (ops/s), over 10,000 keys.
//
//	cd bench && go test -run '^$' -bench BenchmarkMetricsOverhead -benchmem -count 5
func BenchmarkMetricsOverhead(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	c := srv.Client(vm1.DB0, func(o *redis.Options) { o.PoolSize = benchClients })
	if err := luagenrt.Preload(ctx, c, vm1.AllScripts()...); err != nil {
		b.Fatal(err)
	}
	m, err := scriptmetrics.New(prometheus.NewRegistry(), vm1.AllScripts()...)
	if err != nil {
		b.Fatal(err)
	}
	off, err := vm1.NewScripts(vm1.Clients{DB0: c})
	if err != nil {
		b.Fatal(err)
	}
	on, err := vm1.NewScripts(vm1.Clients{DB0: c, Observer: m})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]vm1.APIRLDialogKey, 10000)
	for i := range keys {
		if keys[i], err = vm1.NewAPIRLDialogKey(uuid.NewString(), 86400); err != nil {
			b.Fatal(err)
		}
	}
	args := vm1.RateLimitFixedArgs{Limit: 1_000_000, Window: 24 * time.Hour, Jitter: time.Second, Cost: 1}
	var seq atomic.Uint64
	for _, v := range []struct {
		name string
		s    *vm1.Scripts
	}{{"off", off}, {"on", on}} {
		b.Run(v.name+"/c1", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.s.RateLimitFixed(ctx, keys[seq.Add(1)%10000], args); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(v.name+"/c50", func(b *testing.B) {
			b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			var failures atomic.Int64
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := v.s.RateLimitFixed(ctx, keys[seq.Add(1)%10000], args); err != nil {
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
