package tests

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/luatest"
	"github.com/redis/go-redis/v9"
)

// The foreign-bucket replacement, the token bucket's stored limit and the
// refund scripts give equal replies and an equal keyspace on real Redis (RESP2
// and RESP3) and on the harness.
func TestConformanceRateLimitRefundsAndForeignBuckets(t *testing.T) {
	t.Parallel()
	forEachProtocol(t, func(t *testing.T, ctx context.Context, real *redis.Client, realScripts *vm1.Scripts, h *luatest.Server, harnessScripts *vm1.Scripts) {

		user, _ := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteMessagesSend, 60)
		counter, _ := vm1.NewAPIRLUserKey(uuid.NewString(), vm1.APIRouteProfileGet, 60)
		service, _ := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 60)
		oldHash, _ := vm1.NewAPIRLIPKey(testHMACKey.Sum("198.51.100.9"), vm1.APIRouteInternalInbox, 60)
		// Foreign buckets, the same on both sides.
		for _, cmd := range [][]any{
			{"HSET", user.String(), "base", "1", "tat", "5"},
			{"ZADD", counter.String(), "1", "old"},
			{"SET", service.String(), "12"},
			{"HSET", oldHash.String(), "base", "1", "tat", "999999999"},
		} {
			if err := real.Do(ctx, cmd...).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Do(cmd...); err != nil {
				t.Fatal(err)
			}
			for _, exp := range [][]any{{"PEXPIRE", cmd[1], 50000}} {
				if err := real.Do(ctx, exp...).Err(); err != nil {
					t.Fatal(err)
				}
				if _, err := h.Do(exp...); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Each step's reply is kept so that a refund can name its charge.
		type step struct {
			name string
			run  func(s *vm1.Scripts, n string, prev map[string]vm1.RateDecision) (any, error)
		}
		sliding := func(cost int64, peek bool) func(*vm1.Scripts, string, map[string]vm1.RateDecision) (any, error) {
			return func(s *vm1.Scripts, n string, _ map[string]vm1.RateDecision) (any, error) {
				return s.RateLimitSliding(ctx, user, vm1.RateLimitSlidingArgs{Limit: 5, Window: time.Minute, Jitter: time.Second, Cost: cost, Peek: peek, Nonce: n})
			}
		}
		fixed := func(cost int64, peek bool) func(*vm1.Scripts, string, map[string]vm1.RateDecision) (any, error) {
			return func(s *vm1.Scripts, _ string, _ map[string]vm1.RateDecision) (any, error) {
				return s.RateLimitFixed(ctx, counter, vm1.RateLimitFixedArgs{Limit: 5, Window: time.Minute, Jitter: time.Second, Cost: cost, Peek: peek})
			}
		}
		bucket := func(key vm1.RateLimitTokenBucketBucket, limit, cost int64, peek bool) func(*vm1.Scripts, string, map[string]vm1.RateDecision) (any, error) {
			return func(s *vm1.Scripts, _ string, _ map[string]vm1.RateDecision) (any, error) {
				return s.RateLimitTokenBucket(ctx, key, vm1.RateLimitTokenBucketArgs{Limit: limit, Window: time.Minute, Jitter: time.Second, Cost: cost, Peek: peek})
			}
		}
		nonces := map[string]string{}
		steps := []step{
			{"sliding peek on a hash", sliding(2, true)},
			{"sliding replaces a hash", sliding(2, false)},
			{"sliding again", sliding(1, false)},
			{"sliding refund", func(s *vm1.Scripts, _ string, _ map[string]vm1.RateDecision) (any, error) {
				return s.RateLimitSlidingRefund(ctx, user, vm1.RateLimitSlidingRefundArgs{Cost: 2, Nonce: nonces["sliding replaces a hash"]})
			}},
			{"sliding refund of an unknown nonce", func(s *vm1.Scripts, n string, _ map[string]vm1.RateDecision) (any, error) {
				return s.RateLimitSlidingRefund(ctx, user, vm1.RateLimitSlidingRefundArgs{Cost: 2, Nonce: n})
			}},
			{"fixed peek on a zset", fixed(5, true)},
			{"fixed replaces a zset", fixed(3, false)},
			{"fixed again", fixed(1, false)},
			{"fixed refund", func(s *vm1.Scripts, _ string, prev map[string]vm1.RateDecision) (any, error) {
				return s.RateLimitFixedRefund(ctx, counter, vm1.RateLimitFixedRefundArgs{Cost: 3, Window: time.Minute, ResetAt: prev["fixed replaces a zset"].ResetAt.UnixMilli()})
			}},
			{"fixed refund on a sliding bucket", func(s *vm1.Scripts, _ string, prev map[string]vm1.RateDecision) (any, error) {
				return s.RateLimitFixedRefund(ctx, user, vm1.RateLimitFixedRefundArgs{Cost: 1, Window: time.Minute, ResetAt: prev["fixed again"].ResetAt.UnixMilli()})
			}},
			{"bucket peek on a string", bucket(service, 4, 4, true)},
			{"bucket replaces a string", bucket(service, 4, 3, false)},
			{"bucket refund", func(s *vm1.Scripts, _ string, prev map[string]vm1.RateDecision) (any, error) {
				return s.RateLimitTokenBucketRefund(ctx, service, vm1.RateLimitTokenBucketRefundArgs{Limit: 4, Window: time.Minute, Cost: 2, ResetAt: prev["bucket replaces a string"].ResetAt.UnixMilli()})
			}},
			{"bucket after the refund", bucket(service, 4, 1, true)},
			{"bucket under a new limit", bucket(service, 6, 6, false)},
			{"bucket refund under the old limit", func(s *vm1.Scripts, _ string, prev map[string]vm1.RateDecision) (any, error) {
				return s.RateLimitTokenBucketRefund(ctx, service, vm1.RateLimitTokenBucketRefundArgs{Limit: 4, Window: time.Minute, Cost: 1, ResetAt: prev["bucket under a new limit"].ResetAt.UnixMilli()})
			}},
			{"bucket replaces a hash without limit", bucket(oldHash, 4, 1, false)},
		}
		wantRefund := map[string]bool{
			"sliding refund": true, "sliding refund of an unknown nonce": false,
			"fixed refund": true, "fixed refund on a sliding bucket": false,
			"bucket refund": true, "bucket refund under the old limit": false,
		}
		realPrev, harnessPrev := map[string]vm1.RateDecision{}, map[string]vm1.RateDecision{}
		var lag scripttest.Lag
		for _, s := range steps {
			n := scripttest.Nonce(t)
			nonces[s.name] = n
			lag.Sync(t, h, real)
			want, err := s.run(realScripts, n, realPrev)
			if err != nil {
				t.Fatalf("%s on Redis: %v", s.name, err)
			}
			opts := scripttest.Within(lag.Step())
			got, err := s.run(harnessScripts, n, harnessPrev)
			if err != nil {
				t.Fatalf("%s on the harness: %v", s.name, err)
			}
			if d, ok := want.(vm1.RateDecision); ok {
				realPrev[s.name] = d
				harnessPrev[s.name] = got.(vm1.RateDecision)
			}
			if diff := cmp.Diff(want, got, opts); diff != "" {
				t.Errorf("%s: Redis (-) vs harness (+):\n%s", s.name, diff)
			}
			if refunded, ok := wantRefund[s.name]; ok && want != refunded {
				t.Errorf("%s: refunded %v on Redis, want %v", s.name, want, refunded)
			}
		}
		scripttest.CompareKeyspaces(t, ctx, real, h, map[string]float64{"base": 1, "tat": 6}, lag.Max())
		scripttest.AuditTTLs(t, real, vm1.Keys)
	})
}
