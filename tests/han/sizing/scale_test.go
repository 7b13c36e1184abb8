package sizing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/sizing"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/redis/go-redis/v9"
)

// A family is one kind of HAN key, written through the generated wrappers and
// sized from the same recipe in a cardinality file.
type family struct {
	name string
	// keys is the file's keys section for n keys ("%d" is n).
	keys string
	// queue adds the calls that create the i-th key(s) to b; check reports
	// their outcome after the batch ran.
	queue func(b *runtime.Batch, i int) (check func() error, err error)
}

// results checks the outcomes of pending calls.
func results[T any](ps ...*runtime.Pending[T]) func() error {
	return func() error {
		for _, p := range ps {
			if _, err := p.Result(); err != nil {
				return err
			}
		}
		return nil
	}
}

var scaleIPKey, _ = secrets.NewHMACKey([]byte("sizing-scale-test-ip-key-32bytes"))

func nonce() string { return randomToken(22) }

func randomToken(n int) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rand.IntN(len(chars))]
	}
	return string(b)
}

func randomHex(n int) string {
	const chars = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rand.IntN(len(chars))]
	}
	return string(b)
}

// The HAN key families the scale comparison writes: rate-limit buckets of each
// algorithm and idempotency records, completed (a 512-byte response) and in
// flight (record and lock).
var families = []family{
	{
		name: "rate limit, sliding window (api_rl_user)",
		keys: `
  api_rl_user:
    count: %d
    params: {route_hash: messages.send, window: "3600"}
    steps:
      - script: rate_limit_sliding
        args: {limit: 30, window: 1h, jitter: 2s, cost: 1, peek: false}`,
		queue: func(b *runtime.Batch, i int) (func() error, error) {
			k, err := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 3600)
			return results(vm1.QueueRateLimitSliding(b, k, vm1.RateLimitSlidingArgs{Limit: 30, Window: time.Hour, Jitter: 2 * time.Second, Cost: 1, Nonce: nonce()})), err
		},
	},
	{
		name: "rate limit, fixed window (api_rl_ip)",
		keys: `
  api_rl_ip:
    count: %d
    params: {route_hash: messages.list, window: "3600"}
    steps:
      - script: rate_limit_fixed
        args: {limit: 120, window: 1h, jitter: 2s, cost: 1, peek: false}`,
		queue: func(b *runtime.Batch, i int) (func() error, error) {
			k, err := vm1.NewAPIRLIPKey(scaleIPKey.Sum(strconv.Itoa(i)), vm1.APIRouteMessagesList, 3600)
			return results(vm1.QueueRateLimitFixed(b, k, vm1.RateLimitFixedArgs{Limit: 120, Window: time.Hour, Jitter: 2 * time.Second, Cost: 1})), err
		},
	},
	{
		// A bucket lives until it is full again: cost 600 of 600 an hour keeps it an hour.
		name: "rate limit, token bucket (api_rl_service)",
		keys: `
  api_rl_service:
    count: %d
    params: {route_hash: internal.inbox, window: "3600"}
    steps:
      - script: rate_limit_token_bucket
        args: {limit: 600, window: 1h, jitter: 2s, cost: 600, peek: false}`,
		queue: func(b *runtime.Batch, i int) (func() error, error) {
			k, err := vm1.NewAPIRLServiceKey(fmt.Sprintf("svc-%08d", i), vm1.APIRouteInternalInbox, 3600)
			return results(vm1.QueueRateLimitTokenBucket(b, k, vm1.RateLimitTokenBucketArgs{Limit: 600, Window: time.Hour, Jitter: 2 * time.Second, Cost: 600})), err
		},
	},
	{
		name: "idempotency record, completed (api_idem)",
		keys: `
  api_idem:
    count: %d
    steps:
      - script: idem_reserve
      - script: idem_complete
        args: {status: 201, response: {size: 512}, resource_id: 0b7f9a4e-51c2-4d8e-a3f6-2c9d8e7b1a05}`,
		queue: func(b *runtime.Batch, i int) (func() error, error) {
			user, hm := uuid.NewString(), runtime.HMAC(randomHex(64))
			record, err := vm1.NewAPIIdemKey(vm1.IdemScopeMessageSend, user, hm)
			if err != nil {
				return nil, err
			}
			lock, err := vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, user, hm)
			owner, fp := nonce(), randomHex(64)
			reserved := results(vm1.QueueIdemReserve(b, record, lock, vm1.IdemReserveArgs{Fingerprint: fp, Owner: owner}))
			completed := results(vm1.QueueIdemComplete(b, record, lock, vm1.IdemCompleteArgs{Owner: owner, Fingerprint: fp, Status: 201,
				Response: responseBody, ResourceID: "0b7f9a4e-51c2-4d8e-a3f6-2c9d8e7b1a05"}))
			return func() error {
				if err := reserved(); err != nil {
					return err
				}
				return completed()
			}, err
		},
	},
}

// inFlight is the idempotency family of requests in flight (record and lock).
// Its lock lives 30 s, so it is compared at the test's scale only.
var inFlight = family{
	name: "idempotency in flight (api_idem + api_idem_lock)",
	keys: `
  api_idem:
    count: %[1]d
    steps:
      - script: idem_reserve
  api_idem_lock:
    count: %[1]d
    steps:
      - script: idem_reserve`,
	queue: func(b *runtime.Batch, i int) (func() error, error) {
		user, hm := uuid.NewString(), runtime.HMAC(randomHex(64))
		record, err := vm1.NewAPIIdemKey(vm1.IdemScopeMessageSend, user, hm)
		if err != nil {
			return nil, err
		}
		lock, err := vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, user, hm)
		return results(vm1.QueueIdemReserve(b, record, lock, vm1.IdemReserveArgs{Fingerprint: randomHex(64), Owner: nonce()})), err
	},
}

var responseBody = []byte(randomToken(512))

// compare writes n keys of f through the wrappers on a new server configured
// as vm1's (its eviction policy, with a maxmemory never reached), reads its
// used_memory once only the test's admin connection is left and no table is
// rehashing, and sizes the same recipe with luagen sizing: its predicted
// used_memory, the empty server's included.
func compare(tb testing.TB, f family, n int) (measured, predicted float64) {
	tb.Helper()
	ctx := context.Background()
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../../../lua"), "lua")
	if err != nil {
		tb.Fatal(err)
	}
	src := fmt.Sprintf("version: 1\ninstance: vm1\nsamples: 200\nshard_maxmemory: 4gb\nkeys:"+f.keys+"\n", n)
	file, err := sizing.Parse("scale.yaml", []byte(src), spec)
	if err != nil {
		tb.Fatal(err)
	}
	report, err := sizing.Measure(ctx, spec, srcs, file, sizing.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	predicted = report.Servers[0].DataBytes

	srv := redistest.Start(tb, redistest.WithConfig("maxmemory-policy "+spec.Instance("vm1").Server.EvictionPolicy, "maxmemory 64gb"))
	admin := srv.Admin()
	if err := runtime.Preload(ctx, admin, vm1.AllScripts()...); err != nil {
		tb.Fatal(err)
	}
	write(tb, srv, f, n)
	var why string
	if !redistest.WaitFor(ctx, 60*time.Second, func() bool { why = settled(ctx, admin); return why == "" }) {
		tb.Fatalf("the server did not settle within 60s: %s", why)
	}
	measured = float64(usedMemory(tb, admin))
	if got := admin.DBSize(ctx).Val(); got < int64(n) {
		tb.Fatalf("%d keys on the server after writing %d: keys expired or a write failed", got, n)
	}
	return measured, predicted
}

// write runs the calls of n keys in pipelined batches of 1000, from four
// connections that are closed afterwards (their buffers are not the keys').
func write(tb testing.TB, srv *redistest.Server, f family, n int) {
	tb.Helper()
	const workers, batch = 4, 1000
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			// No retries and long timeouts: a pipeline go-redis resent after a
			// timeout on a loaded machine would run its calls twice.
			c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 1, MaxRetries: -1, ReadTimeout: 2 * time.Minute, WriteTimeout: 2 * time.Minute})
			defer c.Close()
			for start := w * batch; start < n; start += workers * batch {
				b := &runtime.Batch{}
				var checks []func() error
				for i := start; i < min(start+batch, n); i++ {
					check, err := f.queue(b, i)
					if err != nil {
						errs <- err
						return
					}
					checks = append(checks, check)
				}
				if err := b.Exec(context.Background(), c); err != nil {
					errs <- err
					return
				}
				for _, check := range checks {
					if err := check(); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

func usedMemory(tb testing.TB, c *redis.Client) int64 {
	tb.Helper()
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("INFO memory has no used_memory")
	return 0
}

// settled: only the admin connection is left, and neither the keyspace nor
// the expires table of db 0 is rehashing (MEMORY STATS counts both tables of
// a dictionary while it rehashes).
func settled(ctx context.Context, c *redis.Client) string {
	info, err := c.Info(ctx, "clients", "keyspace").Result()
	if err != nil {
		return err.Error()
	}
	if !strings.Contains(info, "connected_clients:1\r") {
		return "clients other than the admin's are connected"
	}
	var keys, expires int64
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "db0:"); ok {
			if _, err := fmt.Sscanf(rest, "keys=%d,expires=%d", &keys, &expires); err != nil {
				return "INFO keyspace: " + err.Error()
			}
		}
	}
	stats, err := c.Do(ctx, "memory", "stats").Result()
	if err != nil {
		return err.Error()
	}
	m, _ := stats.(map[any]any)
	db, _ := m["db.0"].(map[any]any)
	main, _ := db["overhead.hashtable.main"].(int64)
	exp, _ := db["overhead.hashtable.expires"].(int64)
	// Redis 7.0 counts the main table as entries (24) and value objects (16) a
	// key and 8 bytes a bucket, the expires table as entries and buckets.
	if main != keys*40+8*tableSize(keys) || exp != expires*24+8*tableSize(expires) {
		return fmt.Sprintf("db 0 has %d keys (%d expiring) in tables of %d and %d bytes: rehashing", keys, expires, main, exp)
	}
	return ""
}

func tableSize(n int64) int64 {
	if n == 0 {
		return 0
	}
	s := int64(4)
	for s < n {
		s *= 2
	}
	return s
}

// The prediction of luagen sizing is within 10% of what the same keys add to
// used_memory, for each family, at 20,000 keys (BenchmarkScale checks a
// million).
func TestPredictionMatchesMeasuredMemory(t *testing.T) {
	redistest.Need(t)
	for _, f := range append(append([]family{}, families...), inFlight) {
		t.Run(f.name, func(t *testing.T) {
			measured, predicted := compare(t, f, 20000)
			dev := (predicted - measured) / measured
			t.Logf("20,000 keys: measured %.2f MiB, predicted %.2f MiB (%+.1f%%)", measured/(1<<20), predicted/(1<<20), 100*dev)
			if dev > 0.10 || dev < -0.10 {
				t.Errorf("prediction off by %+.1f%%", 100*dev)
			}
		})
	}
}

// BenchmarkScale writes a million keys of each family through the wrappers
// (pipelined) and compares used_memory with luagen sizing's prediction; it
// fails when they are more than 10% apart. Run it once:
//
//	go test ./gen/sizing -run '^$' -bench Scale -benchtime 1x -timeout 60m
func BenchmarkScale(b *testing.B) {
	const n = 1000000
	for _, f := range families {
		b.Run(f.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				start := time.Now()
				measured, predicted := compare(b, f, n)
				dev := (predicted - measured) / measured
				b.ReportMetric(measured/(1<<20), "measured_MiB")
				b.ReportMetric(predicted/(1<<20), "predicted_MiB")
				b.ReportMetric(100*dev, "deviation_%")
				b.ReportMetric(measured/n, "measured_B/key")
				b.Logf("%s: %d keys in %s: measured %.1f MiB, predicted %.1f MiB (%+.1f%%)", f.name, n, time.Since(start).Round(time.Second), measured/(1<<20), predicted/(1<<20), 100*dev)
				if dev > 0.10 || dev < -0.10 {
					b.Errorf("prediction off by %+.1f%%", 100*dev)
				}
			}
		})
	}
}
