package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
)

// The generated wrapper allocates no more than a hand-written go-redis EvalSha
// of the same values plus 2 (issue 11, item 4), for the sliding window (a nonce:
// one more boxed string) and the fixed window, counted on one real server in
// one run. Counts, not times: the two calls share go-redis's own allocations,
// so the difference is the wrapper's.
func TestWrapperAllocatesAtMostEvalShaPlusTwo(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(vm1.DB0)
	if err := runtime.Preload(ctx, c, vm1.AllScripts()...); err != nil {
		t.Fatal(err)
	}
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: c})
	if err != nil {
		t.Fatal(err)
	}
	key, err := vm1.NewAPIRLDialogKey("0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", 86400)
	if err != nil {
		t.Fatal(err)
	}
	nonces := make([]string, 400)
	for i := range nonces {
		nonces[i] = fmt.Sprintf("nonce-%016d", i)
	}
	sliding := vm1.RateLimitSlidingArgs{Limit: 10000, Window: time.Millisecond, Jitter: time.Second, Cost: 1}
	fixed := vm1.RateLimitFixedArgs{Limit: 1_000_000, Window: 24 * time.Hour, Jitter: time.Second, Cost: 1}
	name := key.String()
	var n int
	fail := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name            string
		handWritten, wr func()
	}{
		{"sliding", func() {
			n++
			fail(c.EvalSha(ctx, vm1.RateLimitSlidingSHA1, []string{name}, sliding.Limit, sliding.Window.Milliseconds(), sliding.Jitter.Milliseconds(), sliding.Cost, int64(0), nonces[n%len(nonces)]).Err())
		}, func() {
			n++
			a := sliding
			a.Nonce = nonces[n%len(nonces)]
			_, err := scripts.RateLimitSliding(ctx, key, a)
			fail(err)
		}},
		{"fixed", func() {
			fail(c.EvalSha(ctx, vm1.RateLimitFixedSHA1, []string{name}, fixed.Limit, fixed.Window.Milliseconds(), fixed.Jitter.Milliseconds(), fixed.Cost, int64(0)).Err())
		}, func() {
			_, err := scripts.RateLimitFixed(ctx, key, fixed)
			fail(err)
		}},
	}
	for _, tc := range cases {
		hand := testing.AllocsPerRun(200, tc.handWritten)
		wrapped := testing.AllocsPerRun(200, tc.wr)
		t.Logf("%s: hand-written EvalSha %.1f allocations per call, generated wrapper %.1f", tc.name, hand, wrapped)
		if wrapped > hand+2 {
			t.Errorf("%s: the wrapper allocates %.1f per call, a hand-written EvalSha %.1f: more than 2 over", tc.name, wrapped, hand)
		}
	}
}
