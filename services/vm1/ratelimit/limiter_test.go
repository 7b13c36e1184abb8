package ratelimit

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var testIPKey, _ = secrets.NewHMACKey([]byte("ratelimit test secret, at least 32 bytes long"))

const (
	userA   = "0b9a3f0e-4c3e-4f7e-9a51-6f0b8f1f2a01"
	userB   = "0b9a3f0e-4c3e-4f7e-9a51-6f0b8f1f2a02"
	dialogA = "7d1c2b3a-0f1e-4d2c-8b3a-291817161514"
)

// harness runs the limiter on the gopher-lua harness with a fake clock; every
// script run is checked for undeclared keys and keys left without TTL.
func harness(t *testing.T, p Policy, opts ...func(*Options)) (*luatest.Server, *Limiter) {
	t.Helper()
	h := luatest.NewServer(luatest.NewClock(t0))
	sc := h.Scripter()
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: sc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sc.Check(); err != nil {
			t.Errorf("a script broke a rule: %v", err)
		}
	})
	o := Options{IPKey: testIPKey, Now: h.Clock().Now}
	for _, f := range opts {
		f(&o)
	}
	l, err := New(scripts, p, o)
	if err != nil {
		t.Fatal(err)
	}
	return h, l
}

func one(alg Algorithm, scope Scope, limit int64, window time.Duration) Policy {
	return Policy{vm1.APIRouteMessagesSend: {Algorithm: alg, Limits: []Limit{{Scope: scope, Limit: limit, Window: window}}}}
}

func mustAllow(t *testing.T, l *Limiter, s Subject, cost int64, peek bool) Decision {
	t.Helper()
	var d Decision
	var err error
	if peek {
		d, err = l.Peek(context.Background(), s, vm1.APIRouteMessagesSend, cost)
	} else {
		d, err = l.AllowN(context.Background(), s, vm1.APIRouteMessagesSend, cost)
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Fixed window on the fake clock: the counter lives window + jitter from the
// first request; Redis keeps it until strictly past its expiry, so the first
// millisecond a denied caller is allowed is expiry + 1 ms, and Retry-After says so.
func TestFixedWindowRetryAfterIsExact(t *testing.T) {
	h, l := harness(t, one(FixedWindow, ScopeUser, 3, 10*time.Second))
	s := Subject{UserID: userA}
	key, _ := vm1.NewAPIRLUserKey(userA, vm1.APIRouteMessagesSend, 10)
	clock := h.Clock()
	for i := 0; i < 3; i++ {
		d := mustAllow(t, l, s, 1, false)
		if !d.Allowed || d.Remaining != int64(2-i) || d.RetryAfter != 0 || !d.ResetAt.Equal(t0.Add(10001*time.Millisecond)) {
			t.Fatalf("request %d: %+v", i+1, d)
		}
		clock.Advance(100 * time.Millisecond)
	}
	if ttl := h.Keyspace()[key.String()].TTL; ttl != 10*time.Second-300*time.Millisecond {
		t.Fatalf("counter TTL %v, want the window from the first request", ttl)
	}
	d := mustAllow(t, l, s, 1, false) // t0+300ms
	if d.Allowed || d.Remaining != 0 || d.RetryAfter != 9701*time.Millisecond || !d.ResetAt.Equal(t0.Add(10001*time.Millisecond)) || d.ResetAfter != 9701*time.Millisecond {
		t.Fatalf("fourth request: %+v", d)
	}
	clock.Advance(9700 * time.Millisecond) // t0+10000ms: the counter's expiry, still there
	if d := mustAllow(t, l, s, 1, true); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("at the expiry: %+v", d)
	}
	clock.Advance(time.Millisecond)
	if d := mustAllow(t, l, s, 3, false); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("one ms later, a full window: %+v", d)
	}
}

// Token bucket (GCRA) on the fake clock: 4 tokens per second refill one every
// 250 ms; Retry-After is the exact wait for the cost to fit.
func TestTokenBucketRetryAfterIsExact(t *testing.T) {
	p := Policy{vm1.APIRouteInternalInbox: {Algorithm: TokenBucket, Limits: []Limit{{Scope: ScopeService, Limit: 4, Window: time.Second}}}}
	h, l := harness(t, p)
	s := Subject{Service: "bitrix-sync"}
	call := func(cost int64, peek bool) Decision {
		t.Helper()
		var d Decision
		var err error
		if peek {
			d, err = l.Peek(context.Background(), s, vm1.APIRouteInternalInbox, cost)
		} else {
			d, err = l.AllowN(context.Background(), s, vm1.APIRouteInternalInbox, cost)
		}
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	key, _ := vm1.NewAPIRLServiceKey("bitrix-sync", vm1.APIRouteInternalInbox, 1)
	clock := h.Clock()
	for i := 0; i < 4; i++ {
		if d := call(1, false); !d.Allowed || d.Remaining != int64(3-i) || !d.ResetAt.Equal(t0.Add(time.Duration(i+1)*250*time.Millisecond)) {
			t.Fatalf("burst %d: %+v", i+1, d)
		}
	}
	if ttl := h.Keyspace()[key.String()].TTL; ttl != time.Second {
		t.Fatalf("bucket TTL %v, want the time to refill (1s)", ttl)
	}
	if d := call(1, false); d.Allowed || d.RetryAfter != 250*time.Millisecond || d.Remaining != 0 {
		t.Fatalf("fifth: %+v", d)
	}
	if d := call(3, true); d.Allowed || d.RetryAfter != 750*time.Millisecond {
		t.Fatalf("cost 3: %+v", d)
	}
	clock.Advance(249 * time.Millisecond)
	if d := call(1, true); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("1 ms early: %+v", d)
	}
	clock.Advance(time.Millisecond)
	if d := call(1, false); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("on time: %+v", d)
	}
	// The bucket is full again (and gone) once it has refilled.
	clock.Advance(time.Second)
	if _, ok := h.Keyspace()[key.String()]; !ok {
		t.Fatal("the bucket vanished before it refilled")
	}
	clock.Advance(time.Millisecond)
	if _, ok := h.Keyspace()[key.String()]; ok {
		t.Fatal("a full bucket outlived its TTL")
	}
	if d := call(4, false); !d.Allowed {
		t.Fatalf("a full bucket: %+v", d)
	}
}

// The sliding window through the Limiter: weights and peeks, exact Retry-After.
func TestSlidingWindowThroughTheLimiter(t *testing.T) {
	h, l := harness(t, one(SlidingWindow, ScopeUser, 5, time.Second))
	s := Subject{UserID: userA}
	if d := mustAllow(t, l, s, 3, false); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("weight 3: %+v", d)
	}
	h.Clock().Advance(400 * time.Millisecond)
	if d := mustAllow(t, l, s, 2, true); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("peek weight 2: %+v", d)
	}
	if d := mustAllow(t, l, s, 3, false); d.Allowed || d.RetryAfter != 600*time.Millisecond {
		t.Fatalf("weight 3 over the limit: %+v", d)
	}
}

// Jitter from Go lengthens each bucket's TTL by 0..MaxJitter, whole milliseconds.
func TestJitterStaysWithinItsBound(t *testing.T) {
	h, l := harness(t, one(SlidingWindow, ScopeUser, 5, time.Second), func(o *Options) { o.MaxJitter = 2 * time.Second })
	spread := map[time.Duration]bool{}
	for i := 0; i < 50; i++ {
		u := strings.Replace(userA, "2a01", "2"+strings.Repeat("0", 3-len(itoa(i)))+itoa(i), 1)
		mustAllow(t, l, Subject{UserID: u}, 1, false)
		key, _ := vm1.NewAPIRLUserKey(u, vm1.APIRouteMessagesSend, 1)
		ttl := h.Keyspace()[key.String()].TTL
		if ttl < time.Second || ttl > 3*time.Second || ttl%time.Millisecond != 0 {
			t.Fatalf("TTL %v outside window + [0, 2s]", ttl)
		}
		spread[ttl] = true
	}
	if len(spread) < 10 {
		t.Fatalf("50 buckets got only %d distinct TTLs: jitter does not spread them", len(spread))
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// Several limits: all must allow; a denied request leaves no charge on any
// limit (what the earlier ones took is given back); an allowed decision reports
// the limit with the fewest units left. (Before the refunds, this test asserted
// that a request the last limit denied stayed charged on the earlier ones.)
func TestSeveralLimitsOfARoute(t *testing.T) {
	p := Policy{vm1.APIRouteMessagesSend: {Algorithm: SlidingWindow, Limits: []Limit{
		{Scope: ScopeUser, Limit: 2, Window: time.Minute},
		{Scope: ScopeDialog, Limit: 10, Window: time.Minute},
		{Scope: ScopeIP, Limit: 3, Window: time.Minute},
	}}}
	h, l := harness(t, p)
	ip := netip.MustParseAddr("198.51.100.7")
	userC := "0b9a3f0e-4c3e-4f7e-9a51-6f0b8f1f2a03"
	from := func(user string) Subject { return Subject{UserID: user, DialogID: dialogA, IP: ip} }
	if d := mustAllow(t, l, from(userA), 1, false); !d.Allowed || d.Scope != ScopeUser || d.Remaining != 1 {
		t.Fatalf("first: %+v", d)
	}
	mustAllow(t, l, from(userB), 1, false)
	// A third user from the same address: the IP limit has the fewest units left.
	if d := mustAllow(t, l, from(userC), 1, false); !d.Allowed || d.Scope != ScopeIP || d.Remaining != 0 {
		t.Fatalf("third user: %+v", d)
	}
	// The IP limit, the last one, denies, again and again: the user and dialog
	// limits, which allowed each time, are given back what they took.
	for i := 0; i < 5; i++ {
		if d := mustAllow(t, l, from(userA), 1, false); d.Allowed || d.Scope != ScopeIP || d.RetryAfter != time.Minute {
			t.Fatalf("the address is used up (%d): %+v", i, d)
		}
	}
	userKey, _ := vm1.NewAPIRLUserKey(userA, vm1.APIRouteMessagesSend, 60)
	dialogKey, _ := vm1.NewAPIRLDialogKey(dialogA, 60)
	if n := len(h.Keyspace()[userKey.String()].ZSet); n != 1 {
		t.Fatalf("user A's bucket holds %d entries, want 1: a request the IP limit denied stayed charged", n)
	}
	if n := len(h.Keyspace()[dialogKey.String()].ZSet); n != 3 {
		t.Fatalf("the dialog bucket holds %d entries, want 3 (the allowed requests)", n)
	}
	// From another address user A still has the one unit the user limit allows.
	other := Subject{UserID: userA, DialogID: dialogA, IP: netip.MustParseAddr("198.51.100.8")}
	if d := mustAllow(t, l, other, 1, false); !d.Allowed || d.Scope != ScopeUser || d.Remaining != 0 {
		t.Fatalf("user A from another address: %+v", d)
	}
	// The user limit, the first one, denies: nothing later is charged either.
	if d := mustAllow(t, l, other, 1, false); d.Allowed || d.Scope != ScopeUser {
		t.Fatalf("user A is used up: %+v", d)
	}
	if n := len(h.Keyspace()[dialogKey.String()].ZSet); n != 4 {
		t.Fatalf("the dialog bucket holds %d entries, want 4", n)
	}
}

// Every algorithm: a request a later limit denies leaves the earlier limits as
// they were, however many times it is denied, and the Retry-After it gets is
// the deciding limit's own.
func TestDeniedRequestLeavesNoChargeOnAnyLimit(t *testing.T) {
	for _, c := range []struct {
		alg   Algorithm
		retry time.Duration // of the IP limit once its 2 units are taken at t0
	}{
		{SlidingWindow, time.Minute},
		{FixedWindow, time.Minute + time.Millisecond}, // the counter is gone 1 ms after its expiry
		{TokenBucket, 30 * time.Second},               // 2 per minute: one token every 30 s
	} {
		t.Run(string(c.alg), func(t *testing.T) {
			p := Policy{vm1.APIRouteProfileUpdate: {Algorithm: c.alg, Limits: []Limit{
				{Scope: ScopeUser, Limit: 5, Window: time.Minute},
				{Scope: ScopeIP, Limit: 2, Window: time.Minute},
			}}}
			h, l := harness(t, p)
			ctx := context.Background()
			crowded := Subject{UserID: userA, IP: netip.MustParseAddr("203.0.113.1")}
			for i := 0; i < 2; i++ {
				if d, err := l.Allow(ctx, crowded, vm1.APIRouteProfileUpdate); err != nil || !d.Allowed {
					t.Fatalf("request %d: %+v %v", i+1, d, err)
				}
			}
			for i := 0; i < 10; i++ {
				d, err := l.Allow(ctx, crowded, vm1.APIRouteProfileUpdate)
				if err != nil || d.Allowed || d.Scope != ScopeIP || d.RetryAfter != c.retry {
					t.Fatalf("denied request %d: %+v %v, want the IP limit with Retry-After %v", i+1, d, err, c.retry)
				}
			}
			// The user limit holds the 2 allowed requests only: 3 units are left.
			fresh := Subject{UserID: userA, IP: netip.MustParseAddr("203.0.113.2")}
			d, err := l.Peek(ctx, fresh, vm1.APIRouteProfileUpdate, 2)
			if err != nil || !d.Allowed {
				t.Fatalf("peek: %+v %v", d, err)
			}
			userKey, _ := vm1.NewAPIRLUserKey(userA, vm1.APIRouteProfileUpdate, 60)
			if got := userUnits(t, h, c.alg, userKey.String()); got != 2 {
				t.Fatalf("the user bucket holds %d units, want the 2 allowed", got)
			}
			for i := 0; i < 3; i++ {
				if d, err := l.Allow(ctx, Subject{UserID: userA, IP: netip.MustParseAddr("203.0.113." + itoa(10+i))}, vm1.APIRouteProfileUpdate); err != nil || !d.Allowed {
					t.Fatalf("user A from a fresh address %d: %+v %v", i, d, err)
				}
			}
			if d, err := l.Allow(ctx, fresh, vm1.APIRouteProfileUpdate); err != nil || d.Allowed || d.Scope != ScopeUser {
				t.Fatalf("the sixth of user A: %+v %v, want the user limit", d, err)
			}
		})
	}
}

// userUnits is what a bucket on the harness holds, in units of its algorithm.
func userUnits(t *testing.T, h *luatest.Server, alg Algorithm, key string) int64 {
	t.Helper()
	e, ok := h.Keyspace()[key]
	if !ok {
		return 0
	}
	switch alg {
	case SlidingWindow:
		return int64(len(e.ZSet))
	case FixedWindow:
		n, err := strconv.ParseInt(e.String, 10, 64)
		if err != nil {
			t.Fatalf("counter %q: %v", e.String, err)
		}
		return n
	}
	// A token bucket's tat (1/limit ms) at the harness's time, in tokens.
	tat, _ := strconv.ParseInt(e.Hash["tat"], 10, 64)
	limit, _ := strconv.ParseInt(e.Hash["limit"], 10, 64)
	window, _ := strconv.ParseInt(e.Hash["window"], 10, 64)
	base, _ := strconv.ParseInt(e.Hash["base"], 10, 64)
	left := max(tat-(h.Clock().Now().UnixMilli()-base)*limit, 0)
	return (left + window - 1) / window
}

// Retry-After is when every limit allows the request again: a request the
// first limit denies for a short while, and a later one for longer, waits for
// the later one.
func TestRetryAfterWaitsForEveryLimit(t *testing.T) {
	p := Policy{vm1.APIRouteMessagesSend: {Algorithm: SlidingWindow, Limits: []Limit{
		{Scope: ScopeUser, Limit: 2, Window: 10 * time.Second},
		{Scope: ScopeIP, Limit: 3, Window: time.Minute},
	}}}
	h, l := harness(t, p)
	clock := h.Clock()
	ip := netip.MustParseAddr("192.0.2.50")
	a, b := Subject{UserID: userA, IP: ip}, Subject{UserID: userB, IP: ip}
	mustAllow(t, l, a, 1, false) // t0
	clock.Advance(time.Second)
	mustAllow(t, l, a, 1, false) // t0+1s: user A is full
	clock.Advance(time.Second)
	mustAllow(t, l, b, 1, false) // t0+2s: the address is full
	clock.Advance(time.Second)
	// t0+3s: the user limit frees a unit at t0+10s, the IP limit only at t0+60s.
	d := mustAllow(t, l, a, 1, false)
	if d.Allowed || d.Scope != ScopeIP || d.RetryAfter != 57*time.Second || d.Remaining != 0 {
		t.Fatalf("denied by both: %+v, want the IP limit's 57 s", d)
	}
	if p := mustAllow(t, l, a, 1, true); p.Allowed || p.RetryAfter != 57*time.Second {
		t.Fatalf("a peek: %+v", p)
	}
	clock.Advance(57*time.Second - time.Millisecond)
	if p := mustAllow(t, l, a, 1, true); p.Allowed || p.Scope != ScopeIP || p.RetryAfter != time.Millisecond {
		t.Fatalf("1 ms early: %+v", p)
	}
	clock.Advance(time.Millisecond)
	if d := mustAllow(t, l, a, 1, false); !d.Allowed {
		t.Fatalf("on time: %+v", d)
	}
}

func TestIPsAreHashedAndIPv6CountsBy64(t *testing.T) {
	h, l := harness(t, one(FixedWindow, ScopeIP, 2, time.Minute))
	a := netip.MustParseAddr("2001:db8:1:2:aaaa::1")
	b := netip.MustParseAddr("2001:db8:1:2:bbbb::2") // same /64
	c := netip.MustParseAddr("2001:db8:1:3::1")      // another /64
	mustAllow(t, l, Subject{IP: a}, 1, false)
	if d := mustAllow(t, l, Subject{IP: b}, 1, false); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("same /64: %+v", d)
	}
	if d := mustAllow(t, l, Subject{IP: c}, 1, false); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("another /64: %+v", d)
	}
	mustAllow(t, l, Subject{IP: netip.MustParseAddr("192.0.2.1")}, 1, false)
	if d := mustAllow(t, l, Subject{IP: netip.MustParseAddr("::ffff:192.0.2.1")}, 1, false); d.Remaining != 0 {
		t.Fatalf("an IPv4-mapped address counts as its IPv4 address: %+v", d)
	}
	for k := range h.Keyspace() {
		for _, raw := range []string{"2001", "db8", "192.0.2.1", "192"} {
			if strings.Contains(k, raw) {
				t.Errorf("key %s holds the address", k)
			}
		}
	}
	if len(h.Keyspace()) != 3 {
		t.Fatalf("%d keys, want 3 (two /64s and one IPv4)", len(h.Keyspace()))
	}
}

func TestBadInputIsAnErrorAndWritesNothing(t *testing.T) {
	h, l := harness(t, DefaultPolicy())
	ctx := context.Background()
	s := Subject{UserID: userA, DialogID: dialogA, IP: netip.MustParseAddr("192.0.2.9"), Service: "bitrix-sync"}
	cases := []struct {
		name  string
		route vm1.APIRoute
		s     Subject
		cost  int64
		want  error
	}{
		{"a route outside the allow-list", "admin.delete_everything", s, 1, ErrUnknownRoute},
		{"a user id that could forge a key", vm1.APIRouteProfileGet, Subject{UserID: "x:*:{y}"}, 1, ErrInvalidSubject},
		{"a service name that could forge a key", vm1.APIRouteInternalInbox, Subject{Service: "a:b"}, 1, ErrInvalidSubject},
		{"no user on a user-limited route", vm1.APIRouteProfileGet, Subject{IP: s.IP}, 1, ErrMissingSubject},
		{"no dialog on messages.send", vm1.APIRouteMessagesSend, Subject{UserID: userA, IP: s.IP}, 1, ErrMissingSubject},
		{"cost 0", vm1.APIRouteProfileGet, s, 0, ErrInvalidCost},
		{"cost above the limit", vm1.APIRouteProfileGet, s, 61, ErrInvalidCost},
	}
	for _, c := range cases {
		_, err := l.AllowN(ctx, c.s, c.route, c.cost)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "x:*") {
			t.Errorf("%s: the error repeats the hostile value: %v", c.name, err)
		}
	}
	if _, err := (&Limiter{policy: Policy{}}).Allow(ctx, s, vm1.APIRouteProfileGet); !errors.Is(err, ErrNoPolicy) {
		t.Errorf("a route without policy: %v", err)
	}
	if n := len(h.Keyspace()); n != 0 {
		t.Fatalf("refused requests wrote %d keys", n)
	}
}

func TestMetricsCountByRouteNeverBySubject(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, l := harness(t, one(SlidingWindow, ScopeUser, 1, time.Minute), func(o *Options) { o.Registerer = reg })
	m := l.metrics
	s := Subject{UserID: userA}
	mustAllow(t, l, s, 1, false)
	mustAllow(t, l, s, 1, false)
	mustAllow(t, l, s, 1, false)
	if got := testutil.ToFloat64(m.decisions.WithLabelValues("messages.send", "user", "allowed")); got != 1 {
		t.Errorf("allowed = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.decisions.WithLabelValues("messages.send", "user", "denied")); got != 2 {
		t.Errorf("denied = %v, want 2", got)
	}
	mustAllow(t, l, s, 1, true)
	if got := testutil.ToFloat64(m.decisions.WithLabelValues("messages.send", "user", "denied")); got != 2 {
		t.Errorf("a peek was counted: denied = %v", got)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			for _, lp := range metric.GetLabel() {
				if strings.Contains(lp.GetValue(), userA) || len(lp.GetValue()) > 32 {
					t.Errorf("label %s=%q carries a subject", lp.GetName(), lp.GetValue())
				}
			}
		}
	}
	// A second Limiter on the registry shares its collectors: the two count together.
	scripts, _ := vm1.NewScripts(vm1.Clients{})
	second, err := New(scripts, one(SlidingWindow, ScopeUser, 1, time.Minute), Options{Registerer: reg})
	if err != nil {
		t.Fatalf("a second Limiter on one registry: %v", err)
	}
	if second.metrics.decisions != m.decisions || second.metrics.refundsFailed != m.refundsFailed {
		t.Error("the second Limiter registered collectors of its own")
	}
}
