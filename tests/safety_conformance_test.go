package tests

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/redis/go-redis/v9"
)

// The vm2 scripts (cache_set, cache_get, safety_rate_limit) give equal replies and
// leave an equal keyspace on the harness and on real Redis, over RESP2 and RESP3.
func TestSafetyConformance(t *testing.T) {
	t.Parallel()
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+protocol)), func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t)
			real := srv.Client(vm2.DB0, func(o *redis.Options) { o.Protocol = protocol })
			realScripts, err := vm2.NewScripts(vm2.Clients{DB0: real})
			if err != nil {
				t.Fatal(err)
			}
			h, _, harnessScripts := scripttest.VM2Harness(t)

			text, _ := vm2.NewSafetyTextKey(safetytest.Digest("text"), "rules-9")
			dns, _ := vm2.NewSafetyDNSKey(safetytest.Digest("host.example"), vm2.DNSRRTypeAAAA)
			rl, _ := vm2.NewSafetyRLServiceKey("api-backend", 60)
			v1, _ := safetyrecord.EncodeText(safetyrecord.TextResult{Verdict: safetyrecord.VerdictAllow})
			v2, _ := safetyrecord.EncodeText(safetyrecord.TextResult{Verdict: safetyrecord.VerdictMonitor, MonitorRuleIDs: []string{"m.1"}})
			answer, _ := safetyrecord.EncodeDNS(safetyrecord.DNSAnswer{RRType: vm2.DNSRRTypeAAAA})
			set := func(key vm2.CacheSetEntry, v []byte, stamp int64, ttl, max time.Duration) func(*vm2.Scripts) (any, error) {
				return func(s *vm2.Scripts) (any, error) {
					return s.CacheSet(ctx, key, vm2.CacheSetArgs{Value: v, Stamp: stamp, TTL: ttl, MaxTTL: max})
				}
			}
			get := func(key vm2.CacheGetEntry, stamp int64) func(*vm2.Scripts) (any, error) {
				return func(s *vm2.Scripts) (any, error) { return s.CacheGet(ctx, key, vm2.CacheGetArgs{Stamp: stamp}) }
			}
			limit := func(cost int64, peek bool) func(*vm2.Scripts) (any, error) {
				return func(s *vm2.Scripts) (any, error) {
					return s.SafetyRateLimit(ctx, rl, vm2.SafetyRateLimitArgs{Limit: 3, Window: time.Minute, Jitter: time.Second, Cost: cost, Peek: peek})
				}
			}
			steps := []struct {
				name string
				run  func(*vm2.Scripts) (any, error)
			}{
				{"get absent", get(text, 2)},
				{"set gen 2, TTL clamped", set(text, v1, 2, 72*time.Hour, vm2.SafetyTextMaxTTL)},
				{"get gen 2", get(text, 2)},
				{"get gen 3: stale", get(text, 3)},
				{"set gen 1: refused", set(text, v2, 1, time.Hour, vm2.SafetyTextMaxTTL)},
				{"set gen 3", set(text, v2, 3, time.Hour, vm2.SafetyTextMaxTTL)},
				{"get gen 3", get(text, 3)},
				{"dns set capped", set(dns, answer, 3, time.Hour, vm2.SafetyDNSMaxTTL)},
				{"dns get", get(dns, 3)},
				{"rate first", limit(2, false)},
				{"rate peek", limit(1, true)},
				{"rate second", limit(1, false)},
				{"rate denied", limit(1, false)},
			}
			var lag scripttest.Lag
			for _, s := range steps {
				lag.Sync(t, h, real)
				want, err := s.run(realScripts)
				if err != nil {
					t.Fatalf("%s on Redis: %v", s.name, err)
				}
				opts := scripttest.Within(lag.Step())
				got, err := s.run(harnessScripts)
				if err != nil {
					t.Fatalf("%s on the harness: %v", s.name, err)
				}
				if diff := cmp.Diff(want, got, opts); diff != "" {
					t.Errorf("%s: Redis (-) vs harness (+):\n%s", s.name, diff)
				}
			}
			scripttest.CompareKeyspaces(t, ctx, real, h, nil, lag.Max())
		})
	}
}
