package luatest

import (
	"testing"
	"time"
)

func BenchmarkRun(b *testing.B) {
	clock := NewClock(epoch)
	srv := NewServer(clock)
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
}
