package tests

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/luatest"
	"github.com/redis/go-redis/v9"
)

// compareDecisions: the same decision, the same remaining units; times within slack.
func compareDecisions(t *testing.T, step string, want, got vm1.RateDecision, slack time.Duration) {
	t.Helper()
	if diff := cmp.Diff(want, got, scripttest.Within(slack)); diff != "" {
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
			h, _, harnessScripts := scripttest.VM1Harness(t)
			f(t, context.Background(), real, realScripts, h, harnessScripts)
		})
	}
}

// The same rate-limit scenario on real Redis (RESP2 and RESP3 clients) and on the
// harness gives equal replies and an equal keyspace.
func TestConformanceRateLimits(t *testing.T) {
	t.Parallel()
	forEachProtocol(t, func(t *testing.T, ctx context.Context, real *redis.Client, realScripts *vm1.Scripts, h *luatest.Server, harnessScripts *vm1.Scripts) {

		user, _ := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 60)
		ip, _ := vm1.NewAPIRLIPKey(testHMACKey.Sum("198.51.100.4"), vm1.APIRoutePublicGet, 60)
		service, _ := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 60)
		dialog, _ := vm1.NewAPIRLDialogKey(uuid.NewString(), 60)
		empty, _ := vm1.NewAPIRLDialogKey(uuid.NewString(), 60)
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
		var lag scripttest.Lag
		for _, s := range steps {
			n := scripttest.Nonce(t)
			lag.Sync(t, h, real)
			want, err := s.run(realScripts, n)
			if err != nil {
				t.Fatalf("%s on Redis: %v", s.name, err)
			}
			slack := lag.Step()
			got, err := s.run(harnessScripts, n)
			if err != nil {
				t.Fatalf("%s on the harness: %v", s.name, err)
			}
			compareDecisions(t, s.name, want, got, slack)
		}
		// The token bucket's base is a ms timestamp, its tat counts 1/limit ms.
		scripttest.CompareKeyspaces(t, ctx, real, h, map[string]float64{"base": 1, "tat": 4}, lag.Max())
	})
}
