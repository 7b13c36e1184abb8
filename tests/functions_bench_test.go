package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fn "github.com/hanchat/luagen/gen/testdata/features/functions/golden/app"
	ev "github.com/hanchat/luagen/gen/testdata/features/functions_twin/golden/app"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// phase makes k calls (numbered from first) with callers goroutines sharing
// them, and returns the wall time they took.
func phase(b *testing.B, call func(i int) error, first, k, callers int) time.Duration {
	start := time.Now()
	if callers == 1 {
		for i := first; i < first+k; i++ {
			if err := call(i); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var next atomic.Int64
	next.Store(int64(first))
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= first+k {
					return
				}
				if err := call(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkFunctionsVsEvalSHA compares, in one run on one server and one client,
// the generated wrappers of the same two scripts in the two modes: the
// functions feature (FCALL/FCALL_RO of a loaded library) and its evalsha twin
// (EVALSHA/EVALSHA_RO of preloaded scripts); the typed API is the same. incr
// is hits_incr (INCRBY + PEXPIRE), peek hits_peek (a read-only GET). callers=1
// is one goroutine; callers=50 is 50 goroutines sharing the calls. b.N calls of
// each mode run, in alternating blocks; ns/op and allocs/op cover both modes
// together, evalsha-ops/s and fcall-ops/s each mode's calls per second of its
// own blocks' wall time.
func BenchmarkFunctionsVsEvalSHA(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	b.Cleanup(func() { _ = c.Close() })
	if _, err := runtime.LoadLibrary(ctx, c, fn.Library); err != nil {
		b.Fatal(err)
	}
	if err := runtime.Preload(ctx, c, ev.AllScripts()...); err != nil {
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
	// The two modes alternate in blocks within each benchmark, so that a shared
	// machine's slow moments fall on both alike; each mode's ops/s is its calls
	// over the wall time of its own blocks.
	for _, op := range []string{"incr", "peek"} {
		for _, callers := range []int{1, 50} {
			evalsha, fcall := calls[op+"/evalsha"], calls[op+"/fcall"]
			b.Run(fmt.Sprintf("%s/callers=%d", op, callers), func(b *testing.B) {
				block := 200
				if callers > 1 {
					block = 2000
				}
				var tEv, tFc time.Duration
				for done := 0; done < b.N; {
					k := min(block, b.N-done)
					tEv += phase(b, evalsha, done, k, callers)
					tFc += phase(b, fcall, done, k, callers)
					done += k
				}
				b.ReportMetric(float64(b.N)/tEv.Seconds(), "evalsha-ops/s")
				b.ReportMetric(float64(b.N)/tFc.Seconds(), "fcall-ops/s")
				b.ReportMetric(tFc.Seconds()/tEv.Seconds(), "fcall/evalsha-time")
			})
		}
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
