package ratelimit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/runtime"
)

func TestDefaultPolicyIsValidAndCoversEveryRoute(t *testing.T) {
	p := DefaultPolicy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, r := range vm1.APIRouteValues {
		if _, ok := p[r]; !ok {
			t.Errorf("route %s has no default policy", r)
		}
	}
	if len(p) != len(vm1.APIRouteValues) {
		t.Errorf("the default policy has %d routes, the allow-list %d", len(p), len(vm1.APIRouteValues))
	}
}

// Every limit of a valid policy has a key of its own: no two limits, and so no
// two algorithms, ever meet on one Redis key (where each would reset the other's bucket).
func TestDefaultPolicyGivesEveryLimitItsOwnKey(t *testing.T) {
	seen := map[bucketID]string{}
	for route, rt := range DefaultPolicy() {
		for _, l := range rt.Limits {
			b := bucketOf(route, l)
			where := string(route) + "/" + string(l.Scope)
			if prev, ok := seen[b]; ok {
				t.Errorf("%s and %s share a key", prev, where)
			}
			seen[b] = where
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	ok := Route{Algorithm: SlidingWindow, Limits: []Limit{{Scope: ScopeUser, Limit: 5, Window: time.Minute}}}
	with := func(f func(*Route)) Route {
		r := ok
		r.Limits = append([]Limit(nil), ok.Limits...)
		f(&r)
		return r
	}
	cases := []struct {
		name   string
		policy Policy
		want   string
	}{
		{"route outside the allow-list", Policy{"admin.secret": ok}, "not a value of enum api_route"},
		{"unknown algorithm", Policy{vm1.APIRouteProfileGet: with(func(r *Route) { r.Algorithm = "leaky" })}, "unknown algorithm"},
		{"unknown degraded mode", Policy{vm1.APIRouteProfileGet: with(func(r *Route) { r.Degraded = "maybe" })}, "unknown degraded mode"},
		{"no limits", Policy{vm1.APIRouteProfileGet: with(func(r *Route) { r.Limits = nil })}, "no limits"},
		{"unknown scope", Policy{vm1.APIRouteProfileGet: with(func(r *Route) { r.Limits[0].Scope = "tenant" })}, "unknown scope"},
		{"limit 0", Policy{vm1.APIRouteProfileGet: with(func(r *Route) { r.Limits[0].Limit = 0 })}, "limit 0"},
		{"limit too big", Policy{vm1.APIRouteProfileGet: with(func(r *Route) { r.Limits[0].Limit = maxLimit + 1 })}, "want 1..1000000"},
		{"a sliding window above 10000", Policy{vm1.APIRouteProfileGet: with(func(r *Route) { r.Limits[0].Limit = 10001 })}, "one ZSET member per unit, want 1..10000"},
		{"window not whole seconds", Policy{vm1.APIRouteProfileGet: with(func(r *Route) { r.Limits[0].Window = 1500 * time.Millisecond })}, "whole seconds"},
		{"window above 24h", Policy{vm1.APIRouteProfileGet: with(func(r *Route) { r.Limits[0].Window = 25 * time.Hour })}, "whole seconds"},
		{"token bucket over dialogs", Policy{vm1.APIRouteMessagesSend: with(func(r *Route) {
			r.Algorithm = TokenBucket
			r.Limits[0].Scope = ScopeDialog
		})}, "token bucket takes no dialog limit"},
		{"one key twice in a route", Policy{vm1.APIRouteProfileGet: with(func(r *Route) {
			r.Limits = append(r.Limits, Limit{Scope: ScopeUser, Limit: 9, Window: time.Minute})
		})}, "already used by route profile.get"},
		// Dialog keys hold no route: two routes with dialog limits of one window
		// would share keys, here under two algorithms (ZSET and counter).
		{"a dialog key under two algorithms", Policy{
			vm1.APIRouteMessagesSend: {Algorithm: SlidingWindow, Limits: []Limit{{Scope: ScopeDialog, Limit: 5, Window: time.Minute}}},
			vm1.APIRouteHistoryGet:   {Algorithm: FixedWindow, Limits: []Limit{{Scope: ScopeDialog, Limit: 50, Window: time.Minute}}},
		}, "each resets the other's buckets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.policy.Validate()
			var pe *PolicyError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want a PolicyError containing %q", err, c.want)
			}
		})
	}
	// Two dialog limits of different windows, or the same window on one route
	// for two scopes, are fine.
	fine := Policy{
		vm1.APIRouteMessagesSend: {Algorithm: SlidingWindow, Limits: []Limit{
			{Scope: ScopeDialog, Limit: 5, Window: time.Minute},
			{Scope: ScopeUser, Limit: 5, Window: time.Minute},
		}},
		vm1.APIRouteHistoryGet: {Algorithm: FixedWindow, Limits: []Limit{{Scope: ScopeDialog, Limit: 50, Window: time.Hour}}},
		// The sliding window's cap is its own: 10000 there, a million elsewhere.
		vm1.APIRouteAuthLogin:     {Algorithm: SlidingWindow, Limits: []Limit{{Scope: ScopeIP, Limit: maxSlidingLimit, Window: time.Hour}}},
		vm1.APIRoutePublicGet:     {Algorithm: FixedWindow, Limits: []Limit{{Scope: ScopeIP, Limit: maxLimit, Window: time.Hour}}},
		vm1.APIRouteInternalInbox: {Algorithm: TokenBucket, Limits: []Limit{{Scope: ScopeService, Limit: maxLimit, Window: time.Hour}}},
	}
	if err := fine.Validate(); err != nil {
		t.Fatal(err)
	}
}

// A sliding window keeps one ZSET member per unit: its limit, and so any cost,
// stops at 10000 in the policy, in the generated wrapper (keyspec.yaml) and in
// the script itself, so no request can make Redis write a million members.
func TestSlidingWindowIsCappedAt10000(t *testing.T) {
	if maxSlidingLimit != 10000 {
		t.Fatalf("maxSlidingLimit = %d", maxSlidingLimit)
	}
	h, l := harness(t, one(SlidingWindow, ScopeUser, maxSlidingLimit, time.Hour))
	if _, err := l.AllowN(context.Background(), Subject{UserID: userA}, vm1.APIRouteMessagesSend, maxSlidingLimit+1); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("cost 10001: %v", err)
	}
	if d, err := l.AllowN(context.Background(), Subject{UserID: userA}, vm1.APIRouteMessagesSend, maxSlidingLimit); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("cost 10000: %+v %v", d, err)
	}
	key, _ := vm1.NewAPIRLUserKey(userA, vm1.APIRouteMessagesSend, 3600)
	if n := len(h.Keyspace()[key.String()].ZSet); n != maxSlidingLimit {
		t.Fatalf("%d members, want 10000", n)
	}
	scripts, _ := vm1.NewScripts(vm1.Clients{DB0: h.Scripter()})
	for name, a := range map[string]vm1.RateLimitSlidingArgs{
		"limit": {Limit: maxSlidingLimit + 1, Window: time.Hour, Cost: 1, Nonce: "n1"},
		"cost":  {Limit: maxSlidingLimit, Window: time.Hour, Cost: maxSlidingLimit + 1, Nonce: "n1"},
	} {
		if _, err := scripts.RateLimitSliding(context.Background(), key, a); !errors.Is(err, runtime.ErrInvalidArg) || !strings.Contains(err.Error(), name) {
			t.Errorf("the wrapper with %s 10001: %v, want ErrInvalidArg naming %s", name, err, name)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	scripts, _ := vm1.NewScripts(vm1.Clients{})
	if _, err := New(scripts, DefaultPolicy(), Options{}); err == nil || !strings.Contains(err.Error(), "IPKey") {
		t.Errorf("ip limits without an HMAC key: %v", err)
	}
	if _, err := New(scripts, DefaultPolicy(), Options{IPKey: testIPKey, MaxJitter: 3 * time.Second}); err == nil {
		t.Error("a jitter above the spec's max_jitter: accepted")
	}
	if _, err := New(scripts, Policy{"nope": {}}, Options{IPKey: testIPKey}); err == nil {
		t.Error("an invalid policy: accepted")
	}
	for _, o := range []Options{{IPKey: testIPKey, LocalMaxEntries: -1}, {IPKey: testIPKey, LocalDivisor: -1}} {
		if _, err := New(scripts, DefaultPolicy(), o); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
	// Without scripts, every call fails with runtime.ErrNoClient, never a panic.
	l, err := New(nil, one(SlidingWindow, ScopeUser, 1, time.Minute), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(context.Background(), Subject{UserID: userA}, vm1.APIRouteMessagesSend); !errors.Is(err, runtime.ErrNoClient) {
		t.Errorf("nil scripts: %v, want ErrNoClient", err)
	}
}
