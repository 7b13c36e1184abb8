package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	rvm1 "github.com/hanchat/luagen/bench/internal/rueidisgen/vm1"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/rueidisbackend"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// BenchmarkLatencyPaired is issue 11's 1-caller latency check: each wrapper
// against its raw client, the two calls alternating in one loop (raw then
// wrapper on even iterations, wrapper then raw on odd ones), each timed, so a
// change of the machine's load hits both alike. It reports raw-ns/call,
// wrapper-ns/call and wrapper/raw (the ratio of the two means).
//
//	cd bench && go test -run '^$' -bench BenchmarkLatencyPaired -count 5 -benchtime 20000x .
func BenchmarkLatencyPaired(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	plain := srv.Client(vm1.DB0)
	b.Cleanup(func() { plain.Close() })
	if err := runtime.Preload(ctx, plain, vm1.AllScripts()...); err != nil {
		b.Fatal(err)
	}
	apc := srv.Client(vm1.DB0)
	b.Cleanup(func() { apc.Close() })
	ap, err := runtime.AutoPipeline(apc, nil)
	if err != nil {
		b.Fatal(err)
	}
	gs, err := vm1.NewScripts(vm1.Clients{DB0: plain})
	if err != nil {
		b.Fatal(err)
	}
	aps, err := vm1.NewScripts(vm1.Clients{DB0: ap})
	if err != nil {
		b.Fatal(err)
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, SelectDB: vm1.DB0, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rc.Close)
	rconn, err := rueidisbackend.New(ctx, rc)
	if err != nil {
		b.Fatal(err)
	}
	rs, err := rvm1.NewScripts(rvm1.Clients{DB0: rconn})
	if err != nil {
		b.Fatal(err)
	}
	id := "0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21"
	key, err := vm1.NewAPIRLDialogKey(id, 86400)
	if err != nil {
		b.Fatal(err)
	}
	rkey, err := rvm1.NewAPIRLDialogKey(id, 86400)
	if err != nil {
		b.Fatal(err)
	}
	name := key.String()
	nonces := make([]string, 1<<12)
	for i := range nonces {
		nonces[i] = fmt.Sprintf("nonce-%016d", i)
	}
	sliding := vm1.RateLimitSlidingArgs{Limit: 10000, Window: time.Millisecond, Jitter: time.Second, Cost: 1}
	fixed := vm1.RateLimitFixedArgs{Limit: 1_000_000, Window: 24 * time.Hour, Jitter: time.Second, Cost: 1}
	str := func(v int64) string { return strconv.FormatInt(v, 10) }
	slidingLua := rueidis.NewLuaScript(vm1.RateLimitSlidingScript.Source())
	fixedLua := rueidis.NewLuaScript(vm1.RateLimitFixedScript.Source())
	evalSha := func(c redis.Scripter, sha string, args ...any) error {
		return c.EvalSha(ctx, sha, []string{name}, args...).Err()
	}
	type pair struct {
		name         string
		raw, wrapper func(i int) error
	}
	pairs := []pair{
		{"sliding/rueidis", func(i int) error {
			return slidingLua.Exec(ctx, rc, []string{name}, []string{str(sliding.Limit), str(sliding.Window.Milliseconds()), str(sliding.Jitter.Milliseconds()), str(sliding.Cost), "0", nonces[i%len(nonces)]}).Error()
		}, func(i int) error {
			_, err := rs.RateLimitSliding(ctx, rkey, rvm1.RateLimitSlidingArgs{Limit: sliding.Limit, Window: sliding.Window, Jitter: sliding.Jitter, Cost: sliding.Cost, Nonce: nonces[i%len(nonces)]})
			return err
		}},
		{"fixed/rueidis", func(int) error {
			return fixedLua.Exec(ctx, rc, []string{name}, []string{str(fixed.Limit), str(fixed.Window.Milliseconds()), str(fixed.Jitter.Milliseconds()), str(fixed.Cost), "0"}).Error()
		}, func(int) error {
			_, err := rs.RateLimitFixed(ctx, rkey, rvm1.RateLimitFixedArgs(fixed))
			return err
		}},
	}
	for _, c := range []struct {
		name string
		raw  redis.Scripter
		s    *vm1.Scripts
	}{{"client", plain, gs}, {"autopipeline", ap, aps}} {
		pairs = append(pairs, pair{"sliding/go-redis-" + c.name, func(i int) error {
			return evalSha(c.raw, vm1.RateLimitSlidingSHA1, sliding.Limit, sliding.Window.Milliseconds(), sliding.Jitter.Milliseconds(), sliding.Cost, int64(0), nonces[i%len(nonces)])
		}, func(i int) error {
			a := sliding
			a.Nonce = nonces[i%len(nonces)]
			_, err := c.s.RateLimitSliding(ctx, key, a)
			return err
		}}, pair{"fixed/go-redis-" + c.name, func(int) error {
			return evalSha(c.raw, vm1.RateLimitFixedSHA1, fixed.Limit, fixed.Window.Milliseconds(), fixed.Jitter.Milliseconds(), fixed.Cost, int64(0))
		}, func(int) error {
			_, err := c.s.RateLimitFixed(ctx, key, fixed)
			return err
		}})
	}
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			var raw, wrapped time.Duration
			timed := func(f func(int) error, i int, into *time.Duration) {
				start := time.Now()
				if err := f(i); err != nil {
					b.Fatal(err)
				}
				*into += time.Since(start)
			}
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					timed(p.raw, i, &raw)
					timed(p.wrapper, i, &wrapped)
				} else {
					timed(p.wrapper, i, &wrapped)
					timed(p.raw, i, &raw)
				}
				i++
			}
			b.ReportMetric(float64(raw.Nanoseconds())/float64(i), "raw-ns/call")
			b.ReportMetric(float64(wrapped.Nanoseconds())/float64(i), "wrapper-ns/call")
			b.ReportMetric(float64(wrapped)/float64(raw), "wrapper/raw")
		})
	}
}
