package tests

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	fn "github.com/hanchat/luagen/gen/testdata/features/functions/golden/app"
	ev "github.com/hanchat/luagen/gen/testdata/features/functions_twin/golden/app"
	"github.com/hanchat/luagen/internal/redistest"
	luagenruntime "github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// BenchmarkFunctionsVsEvalSHA compares, in one run on one server and one client,
// the generated wrappers of the same two scripts in the two modes: the
// functions feature (FCALL/FCALL_RO of a loaded library) and its evalsha twin
// (EVALSHA/EVALSHA_RO of preloaded scripts); the typed API is the same. incr
// is hits_incr (INCRBY + PEXPIRE), peek hits_peek (a read-only GET). callers=1
// is one goroutine; callers=50 is 50 goroutines sharing b.N. ops/s is calls
// per second of wall time.
func BenchmarkFunctionsVsEvalSHA(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	b.Cleanup(func() { _ = c.Close() })
	if _, err := luagenruntime.LoadLibrary(ctx, c, fn.Library); err != nil {
		b.Fatal(err)
	}
	if err := luagenruntime.Preload(ctx, c, ev.AllScripts()...); err != nil {
		b.Fatal(err)
	}
	fs, err := fn.NewScripts(fn.Clients{DB0: c})
	if err != nil {
		b.Fatal(err)
	}
	es, err := ev.NewScripts(ev.Clients{DB0: c})
	if err != nil {
		b.Fatal(err)
	}
	const pages = 1000
	fkeys, ekeys := make([]fn.HitsKey, pages), make([]ev.HitsKey, pages)
	for i := range pages {
		fkeys[i], _ = fn.NewHitsKey(fmt.Sprintf("f%d", i))
		ekeys[i], _ = ev.NewHitsKey(fmt.Sprintf("e%d", i))
	}
	calls := map[string]func(i int) error{
		"incr/evalsha": func(i int) error {
			_, err := es.HitsIncr(ctx, ekeys[i%pages], ev.HitsIncrArgs{By: 1})
			return err
		},
		"incr/fcall": func(i int) error {
			_, err := fs.HitsIncr(ctx, fkeys[i%pages], fn.HitsIncrArgs{By: 1})
			return err
		},
		"peek/evalsha": func(i int) error { _, err := es.HitsPeek(ctx, ekeys[i%pages]); return err },
		"peek/fcall":   func(i int) error { _, err := fs.HitsPeek(ctx, fkeys[i%pages]); return err },
	}
	for _, name := range []string{"incr/evalsha", "incr/fcall", "peek/evalsha", "peek/fcall"} {
		call := calls[name]
		b.Run(name+"/callers=1", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := call(i); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
		b.Run(name+"/callers=50", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism((50 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(int(n.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
	// The server's side of the same calls: INFO commandstats.
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		for _, cmd := range []string{"evalsha", "evalsha_ro", "fcall", "fcall_ro"} {
			if strings.HasPrefix(line, "cmdstat_"+cmd+":") {
				b.Logf("server: %s", line)
			}
		}
	}
}
