package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/redis/go-redis/v9"
)

// benchGoroutines is the concurrency of the "parallel" runs.
const benchGoroutines = 50

// fpA is a request fingerprint (64 hex digits).
const fpA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// testHMACKey hashes the benchmark's Idempotency-Keys.
var testHMACKey, _ = secrets.NewHMACKey([]byte("bench-only secret, 32 bytes or more, never in production"))

// BenchmarkVM1DB0 measures, against one redis-server it starts, in one run:
// ratelimit.Limiter.Allow for each algorithm, go-redis/redis_rate's Allow (GCRA)
// for comparison, and the idem_reserve wrapper (a new key, and a retry of a
// completed one). Each runs single-threaded ("serial": ns/op, allocs/op) and
// from 50 goroutines sharing b.N ("parallel50": ops/s). The limits are high, so
// every call is allowed and all take the same path; subjects rotate over 1000
// users.
//
//	cd bench && go test -run '^$' -bench BenchmarkVM1DB0 -benchmem -count 5
func BenchmarkVM1DB0(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	client := srv.Client(vm1.DB0, func(o *redis.Options) { o.PoolSize = benchGoroutines + 14 })
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: client})
	if err != nil {
		b.Fatal(err)
	}
	if err := runtime.Preload(ctx, client, vm1.AllScripts()...); err != nil {
		b.Fatal(err)
	}
	users := make([]string, 1000)
	for i := range users {
		users[i] = uuid.NewString()
	}
	// A high limit, so every call is allowed: a million per second, and the
	// sliding window's cap of 10000 (one ZSET member per unit), far above the
	// ~50 calls per second each of the 1000 subjects gets.
	limitOf := map[ratelimit.Algorithm]int64{ratelimit.SlidingWindow: 10000, ratelimit.FixedWindow: 1000000, ratelimit.TokenBucket: 1000000}
	// One route per algorithm: a key never meets two algorithms.
	routeOf := map[ratelimit.Algorithm]vm1.APIRoute{
		ratelimit.SlidingWindow: vm1.APIRouteMessagesSend,
		ratelimit.FixedWindow:   vm1.APIRouteProfileGet,
		ratelimit.TokenBucket:   vm1.APIRouteInternalInbox,
	}
	allow := func(alg ratelimit.Algorithm) func(int) error {
		route := routeOf[alg]
		l, err := ratelimit.New(scripts, ratelimit.Policy{route: {Algorithm: alg, Limits: []ratelimit.Limit{{Scope: ratelimit.ScopeUser, Limit: limitOf[alg], Window: time.Second}}}},
			ratelimit.Options{MaxJitter: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		return func(i int) error {
			d, err := l.Allow(ctx, ratelimit.Subject{UserID: users[i%len(users)]}, route)
			if err == nil && !d.Allowed {
				err = fmt.Errorf("denied: %+v", d)
			}
			return err
		}
	}
	rr := redis_rate.NewLimiter(client)
	rrLimit := redis_rate.Limit{Rate: 1000000, Burst: 1000000, Period: time.Second}
	rrKeys := make([]string, len(users))
	for i, u := range users {
		rrKeys[i] = "bench:" + u
	}

	// idem_reserve of a new key each time (absent -> in_progress)...
	idemUser := uuid.NewString()
	var fresh atomic.Int64
	reserveNew := func(int) error {
		h := testHMACKey.Sum(fmt.Sprint("k", fresh.Add(1)))
		rec, _ := vm1.NewAPIIdemKey(vm1.IdemScopeMessageSend, idemUser, h)
		lock, _ := vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, idemUser, h)
		r, err := scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: "bench-owner-token"})
		if err == nil && r.State != vm1.IdemStateReserved {
			err = fmt.Errorf("state %s", r.State)
		}
		return err
	}
	// ...and of a completed key (a retry answered from Redis).
	doneH := testHMACKey.Sum("completed")
	doneRec, _ := vm1.NewAPIIdemKey(vm1.IdemScopeMessageSend, idemUser, doneH)
	doneLock, _ := vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, idemUser, doneH)
	if _, err := scripts.IdemWarm(ctx, doneRec, doneLock, vm1.IdemWarmArgs{Owner: "bench-owner-token", Fingerprint: fpA, Status: 201,
		Response: []byte{0x95, 0x01, 0xcc, 0xc9, 0xa0, 0xa0, 0x90}, Version: 2, TTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	reserveDone := func(int) error {
		r, err := scripts.IdemReserve(ctx, doneRec, doneLock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: "bench-owner-token"})
		if err == nil && r.State != vm1.IdemStateCompleted {
			err = fmt.Errorf("state %s", r.State)
		}
		return err
	}

	ops := []struct {
		name string
		op   func(int) error
	}{
		{"allow/luagen-sliding", allow(ratelimit.SlidingWindow)},
		{"allow/luagen-fixed", allow(ratelimit.FixedWindow)},
		{"allow/luagen-token-bucket", allow(ratelimit.TokenBucket)},
		{"allow/redis_rate-gcra", func(i int) error {
			res, err := rr.Allow(ctx, rrKeys[i%len(rrKeys)], rrLimit)
			if err == nil && res.Allowed == 0 {
				err = fmt.Errorf("denied: %+v", res)
			}
			return err
		}},
		{"idem_reserve/new", reserveNew},
		{"idem_reserve/completed", reserveDone},
	}
	for _, o := range ops {
		b.Run(o.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := o.op(i); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
		b.Run(fmt.Sprintf("%s/parallel%d", o.name, benchGoroutines), func(b *testing.B) {
			b.ReportAllocs()
			var next atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < benchGoroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if err := o.op(int(i)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}
