package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	rvm1 "github.com/hanchat/luagen/bench/internal/rueidisgen/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime/rueidisbackend"
	"github.com/redis/rueidis"
)

// The wrapper generated for rueidis (client: rueidis) allocates no more than
// raw rueidis Lua.Exec of the same values plus 2 (issue 11, item 4), for the
// sliding window (an array reply of 4 fields, a nonce) and the fixed window,
// counted on one real server in one run. Lua.Exec here does not decode its
// reply; the wrapper decodes it into its typed result.
//
//	cd bench && go test -run TestRueidisWrapperAllocatesAtMostRawPlusTwo .
func TestRueidisWrapperAllocatesAtMostRawPlusTwo(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, SelectDB: rvm1.DB0, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	conn, err := rueidisbackend.New(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := rueidisbackend.Preload(ctx, conn, rvm1.AllScripts()...); err != nil {
		t.Fatal(err)
	}
	scripts, err := rvm1.NewScripts(rvm1.Clients{DB0: conn})
	if err != nil {
		t.Fatal(err)
	}
	key, err := rvm1.NewAPIRLDialogKey("0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", 86400)
	if err != nil {
		t.Fatal(err)
	}
	nonces := make([]string, 400)
	for i := range nonces {
		nonces[i] = fmt.Sprintf("nonce-%016d", i)
	}
	sliding := rvm1.RateLimitSlidingArgs{Limit: 10000, Window: time.Millisecond, Jitter: time.Second, Cost: 1}
	fixed := rvm1.RateLimitFixedArgs{Limit: 1_000_000, Window: 24 * time.Hour, Jitter: time.Second, Cost: 1}
	slidingLua := rueidis.NewLuaScript(rvm1.RateLimitSlidingScript.Source())
	fixedLua := rueidis.NewLuaScript(rvm1.RateLimitFixedScript.Source())
	str := func(v int64) string { return strconv.FormatInt(v, 10) }
	name := key.String()
	var n int
	fail := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		raw, wr func()
	}{
		{"sliding", func() {
			n++
			fail(slidingLua.Exec(ctx, rc, []string{name}, []string{str(sliding.Limit), str(sliding.Window.Milliseconds()), str(sliding.Jitter.Milliseconds()), str(sliding.Cost), "0", nonces[n%len(nonces)]}).Error())
		}, func() {
			n++
			a := sliding
			a.Nonce = nonces[n%len(nonces)]
			d, err := scripts.RateLimitSliding(ctx, key, a)
			fail(err)
			if !d.Allowed || d.ResetAt.IsZero() {
				t.Fatalf("sliding: %+v, want an allowed call with its reset time", d)
			}
		}},
		{"fixed", func() {
			fail(fixedLua.Exec(ctx, rc, []string{name}, []string{str(fixed.Limit), str(fixed.Window.Milliseconds()), str(fixed.Jitter.Milliseconds()), str(fixed.Cost), "0"}).Error())
		}, func() {
			d, err := scripts.RateLimitFixed(ctx, key, fixed)
			fail(err)
			if !d.Allowed || d.Remaining <= 0 {
				t.Fatalf("fixed: %+v, want an allowed call with budget left", d)
			}
		}},
	}
	for _, tc := range cases {
		// Warm up: rueidis dials and sizes its pipes on first use.
		for range 50 {
			tc.raw()
			tc.wr()
		}
		raw := testing.AllocsPerRun(200, tc.raw)
		wrapped := testing.AllocsPerRun(200, tc.wr)
		t.Logf("%s: rueidis Lua.Exec %.1f allocations per call, generated rueidis wrapper %.1f", tc.name, raw, wrapped)
		if wrapped > raw+2 {
			t.Errorf("%s: the wrapper allocates %.1f per call, raw rueidis %.1f: more than 2 over", tc.name, wrapped, raw)
		}
	}
}
