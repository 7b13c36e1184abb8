// Package safetytest is what tests of Message Safety (services/vm2/...) share:
// a redis-server for vm2 and a gopher-lua harness, its clients and caches with
// registries of their own, the digests its keys take, a wait for wake-ups, and
// a task queue on a PostgreSQL schema of its own.
package safetytest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/services/vm2/safetycache"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/hanchat/luagen/services/vm2/taskqueue"
	"github.com/hanchat/luagen/services/vm2/waker"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Policy is the active config of the tests' Message Safety.
var Policy = safetycache.Policy{Generation: 3, TextTTL: 6 * time.Hour, VerdictTTL: 7 * 24 * time.Hour, LinkTTL: 12 * time.Hour, DNSMaxTTL: 900 * time.Second}

// T0 is the harness clock's start.
var T0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Harness is a safetyredis.Client on the gopher-lua harness with a fake clock
// starting at T0, its metrics on a registry of its own; every script run is
// checked for undeclared keys and missing TTLs when the test ends.
func Harness(t *testing.T) (*luatest.Server, *safetyredis.Client, *prometheus.Registry) {
	t.Helper()
	h := luatest.NewServer(luatest.NewClock(T0))
	sc := h.Scripter()
	reg := prometheus.NewRegistry()
	// The harness answers in-process; timeouts this long are never what a test
	// meets, however loaded the machine (the defaults, 100 ms, were).
	c, err := safetyredis.New(sc, safetyredis.Options{Registerer: reg, Now: h.Clock().Now, CacheTimeout: time.Minute, RateLimitTimeout: time.Minute, PublishTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sc.Check(); err != nil {
			t.Errorf("a script broke a rule: %v", err)
		}
	})
	return h, c, reg
}

// TTLOf is the TTL of key on the harness h; the test fails when there is no key.
func TTLOf(t *testing.T, h *luatest.Server, key string) time.Duration {
	t.Helper()
	e, ok := h.Keyspace()[key]
	if !ok {
		t.Fatalf("no key %s", key)
	}
	return e.TTL
}

// New makes a safetyredis.Client on rdb whose metrics go to a registry of its own.
func New(t testing.TB, rdb redis.Scripter, o safetyredis.Options) (*safetyredis.Client, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	c, err := safetyredis.New(rdb, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

// NewCache makes a safetycache.Cache on c following p.
func NewCache(t testing.TB, c *safetyredis.Client, p safetycache.Policy) *safetycache.Cache {
	t.Helper()
	k, err := safetycache.New(c, p)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// StartRedis starts a redis-server for vm2's db0 and returns it with a client
// of the default user.
func StartRedis(t *testing.T, opts ...redistest.Option) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t, opts...)
	return srv, srv.Client(vm2.DB0)
}

// RedisPID is the process id of the server c is connected to (INFO server).
func RedisPID(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatal("INFO server has no process_id")
	return 0
}

// Impatient makes a client give up on a dead server quickly and never retry, as
// Message Safety configures MESSAGE_SAFETY_REDIS_URL's client.
func Impatient(o *redis.Options) {
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	o.MaxRetries = -1
}

// Digest is the SHA-256 hex digest Message Safety's keys take (analysis,
// content, URL and host hashes are computed by the caller).
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// WaitWakeup waits for a wake-up of reason on sub, skipping others, and fails
// the test when none comes within timeout or the subscription closes.
func WaitWakeup(t testing.TB, sub *waker.Subscription, reason safetyrecord.WakeReason, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case w, ok := <-sub.C():
			if !ok {
				t.Fatalf("the subscription closed before %s", reason)
			}
			if w.Reason == reason {
				return
			}
		case <-deadline.C:
			t.Fatalf("no %s wake-up within %v", reason, timeout)
		}
	}
}

// TaskQueue is a taskqueue.Queue, migrated, on a PostgreSQL schema of its own.
func TaskQueue(t *testing.T) (*taskqueue.Queue, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.Schema(t, 32)
	q := taskqueue.New(pool)
	if err := q.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return q, pool
}

// Enqueue queues n text tasks on q and returns their ids.
func Enqueue(t *testing.T, q *taskqueue.Queue, pool *pgxpool.Pool, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
		if err := q.Enqueue(context.Background(), pool, taskqueue.NewTask{ID: ids[i], Kind: taskqueue.KindText, SubjectID: uuid.NewString()}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}
