package bench

import (
	"context"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	luagenrt "github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// benchClients is the number of concurrent callers of the parallel benchmarks.
const benchClients = 50

// The overhead of a generated wrapper over a raw EVALSHA, side by side in one run
// on one server and one script (rate_limit_fixed on one counter, which always
// allows): go-redis EvalSha with prepared arguments, go-redis's Script.Run, the
// generated wrapper (argument checks, encoding, typed decoding), rueidis, and
// redis-benchmark as the server's ceiling. Each reports ns/op and allocs/op
// (serial) or ops/s (50 callers), and the server-side µs per call from INFO
// commandstats.
func BenchmarkEVALSHA(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	c := srv.Client(vm1.DB0, func(o *redis.Options) { o.PoolSize = benchClients })
	if err := luagenrt.Preload(ctx, c, vm1.AllScripts()...); err != nil {
		b.Fatal(err)
	}
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: c})
	if err != nil {
		b.Fatal(err)
	}
	key, _ := vm1.NewAPIRLDialogKey("0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", 86400)
	args := vm1.RateLimitFixedArgs{Limit: 1_000_000, Window: 24 * time.Hour, Jitter: time.Second, Cost: 1}
	// What a hand-written caller passes: the same values, boxed on each call.
	limit, window, jitter, cost, peek := args.Limit, args.Window.Milliseconds(), args.Jitter.Milliseconds(), args.Cost, int64(0)
	keys := []string{key.String()}
	sha := vm1.RateLimitFixedSHA1
	goredisScript := redis.NewScript(vm1.RateLimitFixedScript.Source())
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, SelectDB: vm1.DB0, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	rueidisCmd := func() rueidis.Completed {
		return rc.B().Evalsha().Sha1(sha).Numkeys(1).Key(keys[0]).Arg("1000000", "86400000", "1000", "1", "0").Build()
	}

	calls := map[string]func() error{
		"go-redis-EvalSha": func() error {
			return c.EvalSha(ctx, sha, []string{key.String()}, limit, window, jitter, cost, peek).Err()
		},
		"go-redis-Script": func() error {
			return goredisScript.Run(ctx, c, []string{key.String()}, limit, window, jitter, cost, peek).Err()
		},
		"generated": func() error { _, err := scripts.RateLimitFixed(ctx, key, args); return err },
		"rueidis":   func() error { return rc.Do(ctx, rueidisCmd()).Error() },
	}
	for _, name := range []string{"go-redis-EvalSha", "go-redis-Script", "generated", "rueidis"} {
		call := calls[name]
		b.Run(name+"/serial", func(b *testing.B) {
			resetStats(b, c)
			b.ReportAllocs()
			for b.Loop() {
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
			reportServer(b, c)
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			resetStats(b, c)
			b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			var failures atomic.Int64
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if call() != nil {
						failures.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
			if failures.Load() > 0 {
				b.Fatalf("%d calls failed", failures.Load())
			}
			reportServer(b, c)
		})
	}
	b.Run("redis-benchmark/parallel", func(b *testing.B) {
		n := max(b.N, 20000)
		out, err := exec.Command("redis-benchmark", "-h", "127.0.0.1", "-p", strconv.Itoa(srv.Port), "-c", strconv.Itoa(benchClients),
			"-n", strconv.Itoa(n), "-q", "--dbnum", strconv.Itoa(vm1.DB0), "EVALSHA", sha, "1", keys[0], "1000000", "86400000", "1000", "1", "0").CombinedOutput()
		if err != nil {
			b.Fatalf("redis-benchmark: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`([0-9.]+) requests per second`).FindSubmatch(out)
		if m == nil {
			b.Fatalf("redis-benchmark said: %s", out)
		}
		rps, _ := strconv.ParseFloat(string(m[1]), 64)
		b.ReportMetric(rps, "ops/s")
	})
}

var usecPerCall = regexp.MustCompile(`cmdstat_evalsha:calls=(\d+),usec=\d+,usec_per_call=([0-9.]+)`)

func resetStats(b *testing.B, c *redis.Client) {
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
}

// reportServer adds the server-side cost of one EVALSHA, from INFO commandstats.
func reportServer(b *testing.B, c *redis.Client) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	m := usecPerCall.FindStringSubmatch(strings.ReplaceAll(info, "\r", ""))
	if m == nil {
		b.Fatalf("no EVALSHA in commandstats:\n%s", info)
	}
	us, _ := strconv.ParseFloat(m[2], 64)
	b.ReportMetric(us, "server-µs/call")
}
