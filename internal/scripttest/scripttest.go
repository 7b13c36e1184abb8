// Package scripttest sets up the generated vm1 and vm2 scripts for tests: on a
// real redis-server (internal/redistest) or on the gopher-lua harness
// (luatest) with a fake clock, and checks what they leave behind: every key
// declared and with a TTL, and the same keyspace on Redis and on the harness.
package scripttest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// T0 is the harness clock's start: a fixed instant, so tests are repeatable.
var T0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// ClockSlack is how far apart the harness clock (set from Redis's TIME before a
// step) and Redis's own clock may be when the step's script runs, besides the
// time the step took (see Lag).
const ClockSlack = 25 * time.Millisecond

// Lag tracks how far Redis's clock may have run ahead of the harness's in a
// conformance scenario: a step runs on Redis some time after the harness clock
// was set from Redis's TIME, on a loaded machine far more than ClockSlack
// later, so each comparison allows ClockSlack plus the time the step took.
type Lag struct {
	start time.Time
	max   time.Duration
}

// Sync sets h's clock to real's TIME; call it before a step. It first waits
// (a few TIME calls) for Redis's clock to enter a millisecond after the one the
// previous step can have run in: two steps in one millisecond tie on one side
// and not on the other (the harness runs a step at the time Sync read, Redis a
// little later), and ties order ZSET members by name, not by time.
func (l *Lag) Sync(t testing.TB, h *luatest.Server, real *redis.Client) {
	t.Helper()
	prev := RedisNow(t, real).Truncate(time.Millisecond)
	now := RedisNow(t, real)
	for !now.Truncate(time.Millisecond).After(prev) {
		now = RedisNow(t, real)
	}
	l.start = time.Now()
	h.Clock().Set(now)
}

// Step records how long the step took since Sync (call it once the step ran on
// Redis) and returns the slack a comparison of its results must allow:
// ClockSlack plus the longest time any step so far took, since a result may
// hold a value an earlier step wrote on both sides (a ZSET score, an expiry)
// with that step's lag.
func (l *Lag) Step() time.Duration {
	l.max = max(l.max, ClockSlack+time.Since(l.start))
	return l.max
}

// Max is the slack of values the scenario's steps left in the keyspace: the
// largest Step so far, at least ClockSlack.
func (l *Lag) Max() time.Duration { return max(l.max, ClockSlack) }

// Within compares durations and times that may differ by slack.
func Within(slack time.Duration) cmp.Options {
	return cmp.Options{
		cmp.Comparer(func(a, b time.Duration) bool { return (a - b).Abs() <= slack }),
		cmp.Comparer(func(a, b time.Time) bool { return a.Sub(b).Abs() <= slack }),
	}
}

// VM1 starts a redis-server and returns vm1's scripts on its DB0, DB1 and DB2
// (preloaded) and a client of DB0.
func VM1(t testing.TB) (*redistest.Server, *vm1.Scripts, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	db0 := srv.Client(vm1.DB0)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: db0, DB1: srv.Client(vm1.DB1), DB2: srv.Client(vm1.DB2)})
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.Preload(context.Background(), db0, vm1.AllScripts()...); err != nil {
		t.Fatal(err)
	}
	return srv, scripts, db0
}

// VM1Harness runs vm1's generated wrappers (every database) on a gopher-lua
// harness whose clock starts at T0, and hands out its Scripter, so a test can
// read the commands each run sent. Every run is checked for undeclared keys
// and written keys without a TTL when the test ends.
func VM1Harness(t testing.TB) (*luatest.Server, *luatest.Scripter, *vm1.Scripts) {
	t.Helper()
	h, sc := harness(t)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: sc, DB1: sc, DB2: sc})
	if err != nil {
		t.Fatal(err)
	}
	return h, sc, scripts
}

// VM2Harness is VM1Harness for vm2.
func VM2Harness(t testing.TB) (*luatest.Server, *luatest.Scripter, *vm2.Scripts) {
	t.Helper()
	h, sc := harness(t)
	scripts, err := vm2.NewScripts(vm2.Clients{DB0: sc})
	if err != nil {
		t.Fatal(err)
	}
	return h, sc, scripts
}

func harness(t testing.TB) (*luatest.Server, *luatest.Scripter) {
	h := luatest.NewServer(luatest.NewClock(T0))
	sc := h.Scripter()
	t.Cleanup(func() {
		if err := sc.Check(); err != nil {
			t.Errorf("a script broke a rule (undeclared key or a written key without TTL): %v", err)
		}
	})
	return h, sc
}

// AuditTTLs fails the test for any key in c's database without a TTL or
// outside every pattern of keys (vm1.Keys, vm2.Keys).
func AuditTTLs(t testing.TB, c *redis.Client, keys []runtime.KeyInfo) {
	t.Helper()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		declared := false
		for _, info := range keys {
			declared = declared || info.Matches(k)
		}
		if !declared {
			t.Errorf("key %s matches no declared pattern", k)
		}
		// PTTL is -1 for a key without a TTL, -2 for one that expired since SCAN.
		if ttl, err := c.PTTL(ctx, k).Result(); err != nil || ttl == -1 {
			t.Errorf("key %s has no TTL (%v, %v)", k, ttl, err)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
}

// RedisNow is the server's clock.
func RedisNow(t testing.TB, c *redis.Client) time.Time {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// Nonce is a fresh random token (owner tokens, rate-limit nonces).
func Nonce(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Context bounds a test's calls: it ends after 30 s or when the test does, so
// a regression fails the test instead of hanging it.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// CompareKeyspaces fails when the harness h and Redis (real) hold different
// keys, types, values or members. It first sets h's clock to Redis's TIME, so
// TTLs are read at the same moment on both. Scores (ms timestamps) and TTLs may
// differ by slack (Lag.Max of the scenario) plus the time the reading took, and
// so may the hash fields named in timeFields (field -> units per ms), which
// hold times. A scenario that left no keys fails: nothing was compared.
func CompareKeyspaces(t testing.TB, ctx context.Context, real *redis.Client, h *luatest.Server, timeFields map[string]float64, slack time.Duration) {
	t.Helper()
	var lag Lag
	lag.Sync(t, h, real)
	want, err := luatest.RedisKeyspace(ctx, real, "*")
	if err != nil {
		t.Fatal(err)
	}
	slack += lag.Step()
	got := h.Keyspace()
	units := 1.0
	for _, v := range timeFields {
		units = math.Max(units, v)
	}
	opts := cmp.Options{
		cmpopts.EquateApprox(0, float64(slack.Milliseconds())), // ZSET scores are ms timestamps
		// Members whose scores differ by less than slack may be listed in either
		// order on the two sides; compare them as sets of (member, score).
		cmpopts.SortSlices(func(a, b luatest.Member) bool { return a.Member < b.Member }),
		cmp.Comparer(func(a, b time.Duration) bool { return (a - b).Abs() <= slack }),
		cmp.FilterPath(func(p cmp.Path) bool {
			mi, ok := p.Last().(cmp.MapIndex)
			if !ok || mi.Key().Kind() != reflect.String {
				return false
			}
			_, isTime := timeFields[mi.Key().String()]
			return isTime && mi.Type().Kind() == reflect.String
		}, cmp.Comparer(func(a, b string) bool {
			x, errA := strconv.ParseFloat(a, 64)
			y, errB := strconv.ParseFloat(b, 64)
			return errA == nil && errB == nil && math.Abs(x-y) <= float64(slack.Milliseconds())*units
		})),
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("keyspace: Redis (-) vs harness (+):\n%s", diff)
	}
	if len(want) == 0 {
		t.Error("the scenario left no keys: nothing was compared")
	}
}
