package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	rvm1 "github.com/hanchat/luagen/bench/internal/rueidisgen/vm1"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	luagenrt "github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/rueidisbackend"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// BenchmarkClients is issue 11's table, side by side in one run on one
// redis-server it starts: the project's sliding-window and fixed-window
// scripts over 10,000 keys, through
//
//   - rueidis Lua.Exec (auto-pipelining; the reference of the ratios),
//   - a hand-written go-redis EvalSha on *redis.Client,
//   - the generated wrapper on *redis.Client,
//   - the generated wrapper on runtime.AutoPipeline (go-redis's blocking
//     auto-pipeliner, default options),
//   - the same with FullDuplex: true,
//   - the generated wrapper on rueidis (luagen generate --client rueidis,
//     internal/rueidisgen: the same typed API over runtime/rueidisbackend),
//   - runtime.Batch of 16 generated Queue calls per Exec on *redis.Client
//     (50 callers only; its ops/s counts script calls, not batches),
//
// each from 50 callers ("c50": ops/s) and from 1 ("c1": ns/op, allocs/op).
// Every call is allowed (high limits), so all take the same path.
//
//	cd bench && go test -run '^$' -bench BenchmarkClients -benchmem -count 5
func BenchmarkClients(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	newClient := func() *redis.Client {
		c := srv.Client(vm1.DB0, func(o *redis.Options) { o.PoolSize = benchClients })
		b.Cleanup(func() { c.Close() })
		return c
	}
	plain := newClient()
	if err := luagenrt.Preload(ctx, plain, vm1.AllScripts()...); err != nil {
		b.Fatal(err)
	}
	ap, err := luagenrt.AutoPipeline(newClient(), nil)
	if err != nil {
		b.Fatal(err)
	}
	fd, err := luagenrt.AutoPipeline(newClient(), &redis.AutoPipelineOptions{FullDuplex: true})
	if err != nil {
		b.Fatal(err)
	}
	if !fd.Config().FullDuplex {
		b.Fatal("FullDuplex did not take effect")
	}
	scripts := map[string]*vm1.Scripts{}
	for name, c := range map[string]redis.Scripter{"client": plain, "autopipeline": ap, "autopipeline-fullduplex": fd} {
		s, err := vm1.NewScripts(vm1.Clients{DB0: c})
		if err != nil {
			b.Fatal(err)
		}
		scripts[name] = s
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, SelectDB: vm1.DB0, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	rconn, err := rueidisbackend.New(ctx, rc)
	if err != nil {
		b.Fatal(err)
	}
	rscripts, err := rvm1.NewScripts(rvm1.Clients{DB0: rconn})
	if err != nil {
		b.Fatal(err)
	}

	const nkeys = 10000
	keys := make([]vm1.APIRLDialogKey, nkeys)
	rkeys := make([]rvm1.APIRLDialogKey, nkeys)
	names := make([]string, nkeys)
	for i := range keys {
		id := uuid.NewString()
		k, err := vm1.NewAPIRLDialogKey(id, 86400)
		if err != nil {
			b.Fatal(err)
		}
		if rkeys[i], err = rvm1.NewAPIRLDialogKey(id, 86400); err != nil {
			b.Fatal(err)
		}
		keys[i], names[i] = k, k.String()
	}
	nonces := make([]string, 1<<16)
	for i := range nonces {
		nonces[i] = fmt.Sprintf("nonce-%016d", i)
	}
	var seq atomic.Uint64

	sliding := vm1.RateLimitSlidingArgs{Limit: 10000, Window: time.Second, Jitter: time.Second, Cost: 1}
	fixed := vm1.RateLimitFixedArgs{Limit: 1_000_000, Window: 24 * time.Hour, Jitter: time.Second, Cost: 1}
	str := func(v int64) string { return strconv.FormatInt(v, 10) }
	slidingLua := rueidis.NewLuaScript(vm1.RateLimitSlidingScript.Source())
	fixedLua := rueidis.NewLuaScript(vm1.RateLimitFixedScript.Source())

	type window struct {
		name  string
		calls map[string]func(i uint64) error
	}
	windows := []window{
		{"sliding", map[string]func(i uint64) error{
			"rueidis-Lua.Exec": func(i uint64) error {
				return slidingLua.Exec(ctx, rc, []string{names[i%nkeys]}, []string{str(sliding.Limit), str(sliding.Window.Milliseconds()), str(sliding.Jitter.Milliseconds()), str(sliding.Cost), "0", nonces[i&(1<<16-1)]}).Error()
			},
			"go-redis-EvalSha": func(i uint64) error {
				return plain.EvalSha(ctx, vm1.RateLimitSlidingSHA1, []string{names[i%nkeys]}, sliding.Limit, sliding.Window.Milliseconds(), sliding.Jitter.Milliseconds(), sliding.Cost, int64(0), nonces[i&(1<<16-1)]).Err()
			},
		}},
		{"fixed", map[string]func(i uint64) error{
			"rueidis-Lua.Exec": func(i uint64) error {
				return fixedLua.Exec(ctx, rc, []string{names[i%nkeys]}, []string{str(fixed.Limit), str(fixed.Window.Milliseconds()), str(fixed.Jitter.Milliseconds()), str(fixed.Cost), "0"}).Error()
			},
			"go-redis-EvalSha": func(i uint64) error {
				return plain.EvalSha(ctx, vm1.RateLimitFixedSHA1, []string{names[i%nkeys]}, fixed.Limit, fixed.Window.Milliseconds(), fixed.Jitter.Milliseconds(), fixed.Cost, int64(0)).Err()
			},
		}},
	}
	for name, s := range scripts {
		windows[0].calls["generated-"+name] = func(i uint64) error {
			a := sliding
			a.Nonce = nonces[i&(1<<16-1)]
			_, err := s.RateLimitSliding(ctx, keys[i%nkeys], a)
			return err
		}
		windows[1].calls["generated-"+name] = func(i uint64) error {
			_, err := s.RateLimitFixed(ctx, keys[i%nkeys], fixed)
			return err
		}
	}
	windows[0].calls["generated-rueidis"] = func(i uint64) error {
		_, err := rscripts.RateLimitSliding(ctx, rkeys[i%nkeys], rvm1.RateLimitSlidingArgs{Limit: sliding.Limit, Window: sliding.Window, Jitter: sliding.Jitter, Cost: sliding.Cost, Nonce: nonces[i&(1<<16-1)]})
		return err
	}
	windows[1].calls["generated-rueidis"] = func(i uint64) error {
		_, err := rscripts.RateLimitFixed(ctx, rkeys[i%nkeys], rvm1.RateLimitFixedArgs(fixed))
		return err
	}
	// runtime.Batch: each call of the row queues batchSize wrapper calls and
	// sends them in one Exec on the plain client; its ops/s counts script
	// calls, so it compares with the other rows' directly.
	const batchSize = 16
	batchOf := func(queue func(bt *luagenrt.Batch, i uint64) func() error) func(i uint64) error {
		return func(i uint64) error {
			var bt luagenrt.Batch
			results := make([]func() error, 0, batchSize)
			for j := range uint64(batchSize) {
				results = append(results, queue(&bt, i*batchSize+j))
			}
			if err := bt.Exec(ctx, plain); err != nil {
				return err
			}
			for _, r := range results {
				if err := r(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	windows[0].calls["generated-batch16"] = batchOf(func(bt *luagenrt.Batch, i uint64) func() error {
		a := sliding
		a.Nonce = nonces[i&(1<<16-1)]
		p := vm1.QueueRateLimitSliding(bt, keys[i%nkeys], a)
		return func() error { _, err := p.Result(); return err }
	})
	windows[1].calls["generated-batch16"] = batchOf(func(bt *luagenrt.Batch, i uint64) func() error {
		p := vm1.QueueRateLimitFixed(bt, keys[i%nkeys], fixed)
		return func() error { _, err := p.Result(); return err }
	})
	order := []string{"rueidis-Lua.Exec", "go-redis-EvalSha", "generated-client", "generated-autopipeline", "generated-autopipeline-fullduplex", "generated-rueidis", "generated-batch16"}
	for _, w := range windows {
		for _, name := range order {
			call := w.calls[name]
			perCall := 1
			if name == "generated-batch16" {
				perCall = batchSize
			}
			b.Run(w.name+"/"+name+"/c50", func(b *testing.B) {
				b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				var failures atomic.Int64
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if call(seq.Add(1)) != nil {
							failures.Add(1)
						}
					}
				})
				b.ReportMetric(float64(b.N*perCall)/time.Since(start).Seconds(), "ops/s")
				if failures.Load() > 0 {
					b.Fatalf("%d calls failed", failures.Load())
				}
			})
			if perCall > 1 {
				continue // the table has no 1-caller row for batches
			}
			b.Run(w.name+"/"+name+"/c1", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := call(seq.Add(1)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
