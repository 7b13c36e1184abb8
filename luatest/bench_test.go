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
//   - redis-evalsha: the same script by EVALSHA on a private redis-server over
//     loopback (go-redis, RESP2), for scale: one round trip.
func BenchmarkRun(b *testing.B) {
	for _, mode := range []struct {
		name  string
		fresh bool
	}{{"pooled", false}, {"fresh", true}} {
		b.Run(mode.name, func(b *testing.B) {
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
