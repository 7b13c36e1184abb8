package tests

import (
	"context"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/luatest"
	"github.com/redis/go-redis/v9"
)

// stepClock keeps the harness clock on Redis's: before each step it sets the
// harness clock to Redis's TIME, and after the step ran on Redis it reads TIME
// again. The script on Redis read its clock between the two, so the harness
// and Redis may differ by that interval (and a millisecond of rounding), and
// by no more: comparisons allow exactly what was measured.
type stepClock struct {
	h      *luatest.Server
	real   *redis.Client
	before time.Time
	step   time.Duration // the interval of the last step
	max    time.Duration // the widest interval so far
}

// start sets the harness clock to Redis's before a step.
func (c *stepClock) start(t *testing.T) {
	t.Helper()
	c.before = redisNow(t, c.real)
	c.h.Clock().Set(c.before)
}

// ran measures the step once it ran on Redis.
func (c *stepClock) ran(t *testing.T) {
	t.Helper()
	c.step = redisNow(t, c.real).Sub(c.before) + time.Millisecond
	c.max = max(c.max, c.step)
}

// slack is how far a time in a step's reply may be off: such a time (a retry
// after, a reset) comes from this step's clock and one an earlier step
// stored, each as far off as its step was long.
func (c *stepClock) slack() time.Duration { return 2 * c.max }

// compareKeyspaces fails when the harness and Redis hold different keys, types,
// values or members; scores and TTLs may differ by clockSlack, and so may the
// hash fields named in timeFields (field -> units per ms), which hold times.
//
// The harness clock is set to Redis's just before Redis's keyspace is read, and
// the time the reading takes is added to the slack, since Redis counts TTLs
// down meanwhile.
func compareKeyspaces(t *testing.T, ctx context.Context, real *redis.Client, h *luatest.Server, timeFields map[string]float64, clockSlack time.Duration) {
	t.Helper()
	before := redisNow(t, real)
	h.Clock().Set(before)
	want, err := luatest.RedisKeyspace(ctx, real, "*")
	if err != nil {
		t.Fatal(err)
	}
	clockSlack += redisNow(t, real).Sub(before) + time.Millisecond
	got := h.Keyspace()
	opts := cmp.Options{
		cmpopts.EquateApprox(0, float64(clockSlack.Milliseconds())), // ZSET scores are ms timestamps
		cmp.Comparer(func(a, b time.Duration) bool { return (a - b).Abs() <= clockSlack }),
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
			return errA == nil && errB == nil && math.Abs(x-y) <= float64(clockSlack.Milliseconds())*maxUnits(timeFields)
		})),
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("keyspace: Redis (-) vs harness (+):\n%s", diff)
	}
	if len(want) == 0 {
		t.Error("the scenario left no keys: nothing was compared")
	}
}

func maxUnits(m map[string]float64) float64 {
	out := 1.0
	for _, v := range m {
		out = math.Max(out, v)
	}
	return out
}

// compareDecisions: the same decision, the same remaining units; times within clockSlack.
func compareDecisions(t *testing.T, step string, want, got vm1.RateDecision, clockSlack time.Duration) {
	t.Helper()
	opts := cmp.Options{
		cmp.Comparer(func(a, b time.Duration) bool { return (a - b).Abs() <= clockSlack }),
		cmp.Comparer(func(a, b time.Time) bool { return a.Sub(b).Abs() <= clockSlack }),
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("%s: Redis (-) vs harness (+):\n%s", step, diff)
	}
}

// forEachProtocol runs a conformance scenario once per RESP version of the real
// client: f gets a fresh redis-server's DB0 with vm1's scripts and a fresh
// harness with the same scripts.
func forEachProtocol(t *testing.T, f func(t *testing.T, ctx context.Context, real *redis.Client, realScripts *vm1.Scripts, h *luatest.Server, harnessScripts *vm1.Scripts)) {
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(protocol), func(t *testing.T) {
			real := redistest.Start(t).Client(vm1.DB0, func(o *redis.Options) { o.Protocol = protocol })
			realScripts, err := vm1.NewScripts(vm1.Clients{DB0: real})
			if err != nil {
				t.Fatal(err)
			}
			h, harnessScripts := harnessVM1(t)
			f(t, context.Background(), real, realScripts, h, harnessScripts)
		})
	}
}

// The same rate-limit scenario on real Redis (RESP2 and RESP3 clients) and on the
// harness gives equal replies and an equal keyspace.
func TestConformanceRateLimits(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, ctx context.Context, real *redis.Client, realScripts *vm1.Scripts, h *luatest.Server, harnessScripts *vm1.Scripts) {

		user, _ := vm1.NewAPIRLUserKey(uuid(t), vm1.APIRouteMessagesSend, 60)
		ip, _ := vm1.NewAPIRLIPKey(mustHMAC(t, "198.51.100.4"), vm1.APIRoutePublicGet, 60)
		service, _ := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 60)
		dialog, _ := vm1.NewAPIRLDialogKey(uuid(t), 60)
		empty, _ := vm1.NewAPIRLDialogKey(uuid(t), 60)
		type step struct {
			name string
			run  func(*vm1.Scripts, string) (vm1.RateDecision, error)
		}
		sliding := func(key vm1.RateLimitSlidingBucket, limit, cost int64, peek bool) func(*vm1.Scripts, string) (vm1.RateDecision, error) {
			return func(s *vm1.Scripts, n string) (vm1.RateDecision, error) {
				return s.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{Limit: limit, Window: time.Minute, Jitter: time.Second, Cost: cost, Peek: peek, Nonce: n})
			}
		}
		fixed := func(key vm1.RateLimitFixedBucket, limit, cost int64, peek bool) func(*vm1.Scripts, string) (vm1.RateDecision, error) {
			return func(s *vm1.Scripts, _ string) (vm1.RateDecision, error) {
				return s.RateLimitFixed(ctx, key, vm1.RateLimitFixedArgs{Limit: limit, Window: time.Minute, Jitter: time.Second, Cost: cost, Peek: peek})
			}
		}
		bucket := func(key vm1.RateLimitTokenBucketBucket, limit, cost int64, peek bool) func(*vm1.Scripts, string) (vm1.RateDecision, error) {
			return func(s *vm1.Scripts, _ string) (vm1.RateDecision, error) {
				return s.RateLimitTokenBucket(ctx, key, vm1.RateLimitTokenBucketArgs{Limit: limit, Window: time.Minute, Jitter: time.Second, Cost: cost, Peek: peek})
			}
		}
		steps := []step{
			{"sliding first", sliding(user, 3, 1, false)},
			{"sliding peek", sliding(user, 3, 2, true)},
			{"sliding weight 2", sliding(user, 3, 2, false)},
			{"sliding denied", sliding(user, 3, 1, false)},
			{"sliding peek denied", sliding(user, 3, 1, true)},
			{"sliding other key", sliding(ip, 10, 4, false)},
			{"fixed first", fixed(dialog, 2, 1, false)},
			{"fixed second", fixed(dialog, 2, 1, false)},
			{"fixed denied", fixed(dialog, 2, 1, false)},
			{"fixed peek on empty", fixed(empty, 5, 5, true)},
			{"bucket burst", bucket(service, 4, 3, false)},
			{"bucket one more", bucket(service, 4, 1, false)},
			{"bucket denied", bucket(service, 4, 2, false)},
			{"bucket peek", bucket(service, 4, 1, true)},
		}
		clock := &stepClock{h: h, real: real}
		for _, s := range steps {
			n := nonce(t)
			clock.start(t)
			want, err := s.run(realScripts, n)
			if err != nil {
				t.Fatalf("%s on Redis: %v", s.name, err)
			}
			clock.ran(t)
			got, err := s.run(harnessScripts, n)
			if err != nil {
				t.Fatalf("%s on the harness: %v", s.name, err)
			}
			compareDecisions(t, s.name, want, got, clock.slack())
		}
		// The token bucket's base is a ms timestamp, its tat counts 1/limit ms.
		compareKeyspaces(t, ctx, real, h, map[string]float64{"base": 1, "tat": 4}, clock.max)
	})
}
