package luatest

import (
	"context"
	"testing"
	"time"
)

// BenchmarkRun runs the sliding-window rate limit (testdata/rate_limit_sliding.lua:
// ZREMRANGEBYSCORE, ZCARD, ZADD, PEXPIRE on one key) side by side:
//   - pooled: Server.Run on a state taken from the pool (the default);
//   - fresh: Server.Run with FreshState, a new Lua state per run (the harness
//     before the pool);
//   - pooled-covered: pooled, with Lua coverage recorded (LUAGEN_COVER): what
//     coverage adds to a harness run;
//   - redis-evalsha: the same script by EVALSHA on a private redis-server over
//     loopback (go-redis, RESP2), for scale: one round trip.
func BenchmarkRun(b *testing.B) {
	for _, mode := range []struct {
		name         string
		fresh, cover bool
	}{{"pooled", false, false}, {"pooled-covered", false, true}, {"fresh", true, false}} {
		b.Run(mode.name, func(b *testing.B) {
			if mode.cover {
				recordCoverage(b)
			} else {
				noCoverage(b)
			}
			clock := NewClock(epoch)
			srv := NewServer(clock)
			srv.FreshState = mode.fresh
			sc, err := srv.LoadFile("testdata/rate_limit_sliding.lua")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				clock.Advance(time.Millisecond)
				res := srv.Run(sc, []string{"rl"}, clock.Now().UnixMilli(), 10000, 100, i)
				if res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
	b.Run("redis-evalsha", func(b *testing.B) {
		client := startRedis(b)
		ctx := context.Background()
		src, err := readFile("testdata/rate_limit_sliding.lua")
		if err != nil {
			b.Fatal(err)
		}
		sha, err := client.ScriptLoad(ctx, src).Result()
		if err != nil {
			b.Fatal(err)
		}
		now := epoch.UnixMilli()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now++
			if err := client.EvalSha(ctx, sha, []string{"rl"}, now, 10000, 100, i).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCoverageCost is BenchmarkRun's pooled and pooled-covered side by
// side in one loop, call by call alternating, so that a machine whose speed
// drifts slows both alike: it reports each one's mean (ns/plain, ns/covered)
// and their ratio (covered/plain), the cost of recording coverage.
func BenchmarkCoverageCost(b *testing.B) {
	noCoverage(b)
	plainSrv := NewServer(NewClock(epoch))
	plain, err := plainSrv.LoadFile("testdata/rate_limit_sliding.lua")
	if err != nil {
		b.Fatal(err)
	}
	recordCoverage(b)
	coveredSrv := NewServer(NewClock(epoch))
	covered, err := coveredSrv.LoadFile("testdata/rate_limit_sliding.lua")
	if err != nil {
		b.Fatal(err)
	}
	if plain.cover != nil || covered.cover == nil {
		b.Fatal("coverage is not on for exactly one of the two")
	}
	var tPlain, tCovered time.Duration
	run := func(srv *Server, sc *Script, i int) time.Duration {
		srv.Clock().Advance(time.Millisecond)
		start := time.Now()
		res := srv.Run(sc, []string{"rl"}, srv.Clock().Now().UnixMilli(), 10000, 100, i)
		took := time.Since(start)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		return took
	}
	n := 0
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			tPlain += run(plainSrv, plain, i)
			tCovered += run(coveredSrv, covered, i)
		} else {
			tCovered += run(coveredSrv, covered, i)
			tPlain += run(plainSrv, plain, i)
		}
		n++
	}
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(n), "ns/plain")
	b.ReportMetric(float64(tCovered.Nanoseconds())/float64(n), "ns/covered")
	b.ReportMetric(float64(tCovered)/float64(tPlain), "covered/plain")
}
