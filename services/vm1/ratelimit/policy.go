package ratelimit

import (
	"fmt"
	"sort"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/services/degraded"
)

// Algorithm is how a route's limits count requests. Each algorithm keeps its
// bucket in another Redis type (ZSET, string counter, HASH), so one key must
// never be used by two algorithms at once: they would reset each other's
// buckets. A Policy binds each route to exactly one algorithm and gives every
// limit a key of its own.
type Algorithm string

const (
	// SlidingWindow counts the units taken over the last Window (a ZSET of
	// request timestamps), so there is no double burst at a window edge.
	SlidingWindow Algorithm = "sliding_window"
	// FixedWindow counts units in a window opened by its first request (a
	// counter that expires after Window plus up to the jitter).
	FixedWindow Algorithm = "fixed_window"
	// TokenBucket refills Limit tokens evenly over Window and allows bursts up
	// to Limit (GCRA, a HASH). It is meant for service routes; it takes no
	// dialog limit.
	TokenBucket Algorithm = "token_bucket"
)

// Valid reports whether a is a declared Algorithm.
func (a Algorithm) Valid() bool {
	return a == SlidingWindow || a == FixedWindow || a == TokenBucket
}

// Scope is whose requests a limit counts; each scope has its own key pattern in
// keyspec.yaml (han:api:rl:user:*, ...:ip:*, ...:dialog:*, ...:service:*).
type Scope string

const (
	// ScopeUser counts per authenticated user (Subject.UserID).
	ScopeUser Scope = "user"
	// ScopeIP counts per client address (Subject.IP), kept in the key only as an
	// HMAC made with the service's secret.
	ScopeIP Scope = "ip"
	// ScopeDialog counts per dialog (Subject.DialogID). Its key holds no route, so
	// a policy may give it to one route per window only.
	ScopeDialog Scope = "dialog"
	// ScopeService counts per authenticated internal service (Subject.Service).
	ScopeService Scope = "service"
)

// Valid reports whether s is a declared Scope.
func (s Scope) Valid() bool {
	return s == ScopeUser || s == ScopeIP || s == ScopeDialog || s == ScopeService
}

// Limit is one limit of a route: at most Limit units per Window for one Scope.
type Limit struct {
	Scope Scope
	// Limit is the units allowed per Window, 1..1000000; 1..10000 under a
	// SlidingWindow, which keeps one ZSET member per unit.
	Limit int64
	// Window is whole seconds, 1s..24h; it is part of the key.
	Window time.Duration
}

// Route is the policy of one route: one algorithm for all of its limits, the
// limits (all must allow a request), and what to do without Redis.
type Route struct {
	Algorithm Algorithm
	Limits    []Limit
	// Degraded is what the route does when Redis cannot answer (seed 000 §10):
	// degraded.FailClosed (the zero value) refuses with an error matching
	// ErrUnavailable, which StatusCode maps to 503; degraded.FailOpen allows,
	// marked Degraded, under the edge's own limits (profile and history reads,
	// internal inbox); degraded.LocalLimit applies the route's limits in this
	// process only, divided by Options.LocalDivisor, in a bounded table that
	// denies once full.
	Degraded degraded.Policy
}

// Policy binds routes of the api_route allow-list (keyspec.yaml) to their limits.
//
// A key holds the route and the window but not the algorithm (nor, for a
// token bucket, the limit): after a policy change, a bucket the old policy left
// (for at most window + 2 s) is of another type, or counted under another limit.
// The scripts treat such a bucket as empty and replace it, so a change costs at
// most one fresh window per subject, never an error or a misread.
type Policy map[vm1.APIRoute]Route

const (
	maxLimit  = 1000000
	maxWindow = 24 * time.Hour
	// maxSlidingLimit bounds a sliding window's limit (and so its cost): the
	// ZSET holds one member per unit (keyspec.yaml: rate_limit_sliding's limit).
	maxSlidingLimit = 10000
)

// PolicyError is a policy New refuses. It names the route and the limit.
type PolicyError struct {
	Route  vm1.APIRoute
	Limit  int // index in Route.Limits; -1 for the route itself
	Reason string
}

func (e *PolicyError) Error() string {
	if e.Limit < 0 {
		return fmt.Sprintf("ratelimit policy: route %s: %s", e.Route, e.Reason)
	}
	return fmt.Sprintf("ratelimit policy: route %s: limit %d: %s", e.Route, e.Limit, e.Reason)
}

// bucketID names the key a limit uses, without the subject: two limits with
// the same bucketID would share keys (and, under two algorithms, reset each
// other's buckets: each script replaces a bucket of another type).
type bucketID struct {
	scope  Scope
	route  vm1.APIRoute // empty for dialog keys, which hold no route
	window int64
}

func bucketOf(route vm1.APIRoute, l Limit) bucketID {
	b := bucketID{scope: l.Scope, route: route, window: int64(l.Window / time.Second)}
	if l.Scope == ScopeDialog {
		b.route = ""
	}
	return b
}

// Validate reports the first problem of p in route order: a route outside the
// allow-list, an unknown algorithm, scope or degraded mode, a limit out of
// bounds, a token bucket over dialogs, or two limits that would share a key.
func (p Policy) Validate() error {
	routes := make([]vm1.APIRoute, 0, len(p))
	for r := range p {
		routes = append(routes, r)
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i] < routes[j] })
	owner := map[bucketID]vm1.APIRoute{}
	for _, r := range routes {
		rt := p[r]
		bad := func(i int, format string, args ...any) error {
			return &PolicyError{Route: r, Limit: i, Reason: fmt.Sprintf(format, args...)}
		}
		switch {
		case !r.Valid():
			return bad(-1, "not a value of enum api_route in keyspec.yaml")
		case !rt.Algorithm.Valid():
			return bad(-1, "unknown algorithm %q", rt.Algorithm)
		case !rt.Degraded.Valid():
			return bad(-1, "unknown degraded mode %q", rt.Degraded)
		case len(rt.Limits) == 0:
			return bad(-1, "no limits: a route without limits is not rate limited, leave it out")
		}
		for i, l := range rt.Limits {
			switch {
			case !l.Scope.Valid():
				return bad(i, "unknown scope %q", l.Scope)
			case l.Limit < 1 || l.Limit > maxLimit:
				return bad(i, "limit %d: want 1..%d", l.Limit, maxLimit)
			case rt.Algorithm == SlidingWindow && l.Limit > maxSlidingLimit:
				return bad(i, "limit %d: a sliding window keeps one ZSET member per unit, want 1..%d (use a fixed window or a token bucket above)", l.Limit, maxSlidingLimit)
			case l.Window < time.Second || l.Window > maxWindow || l.Window%time.Second != 0:
				return bad(i, "window %s: want whole seconds, 1s..24h", l.Window)
			case rt.Algorithm == TokenBucket && l.Scope == ScopeDialog:
				return bad(i, "a token bucket takes no dialog limit (rate_limit_token_bucket accepts no han:api:rl:dialog key)")
			}
			b := bucketOf(r, l)
			if prev, taken := owner[b]; taken {
				return bad(i, "its %s key for a %s window is already used by route %s: two limits sharing a key count each other's requests, and under two algorithms each resets the other's buckets", l.Scope, l.Window, prev)
			}
			owner[b] = r
		}
	}
	return nil
}

// DefaultPolicy is a starting policy for every route of the allow-list. The
// numbers are placeholders until the load profile fixes them; the shape is the
// point: mutating calls use sliding windows and fail closed (seed 000 §10), reads
// use fixed windows and fail open under the edge's limits, public and auth
// routes fall back to a local limiter, and the internal inbox uses a token
// bucket per service.
func DefaultPolicy() Policy {
	slidingClosed := func(limits ...Limit) Route {
		return Route{Algorithm: SlidingWindow, Degraded: degraded.FailClosed, Limits: limits}
	}
	fixedOpen := func(limits ...Limit) Route {
		return Route{Algorithm: FixedWindow, Degraded: degraded.FailOpen, Limits: limits}
	}
	local := func(a Algorithm, limits ...Limit) Route {
		return Route{Algorithm: a, Degraded: degraded.LocalLimit, Limits: limits}
	}
	perMinute := func(s Scope, n int64) Limit { return Limit{Scope: s, Limit: n, Window: time.Minute} }
	return Policy{
		vm1.APIRouteAuthLogin:              local(SlidingWindow, perMinute(ScopeIP, 10), Limit{Scope: ScopeIP, Limit: 50, Window: time.Hour}),
		vm1.APIRouteAuthRefresh:            local(SlidingWindow, perMinute(ScopeIP, 60)),
		vm1.APIRouteMessagesSend:           slidingClosed(perMinute(ScopeUser, 30), perMinute(ScopeDialog, 60), perMinute(ScopeIP, 120)),
		vm1.APIRouteMessagesList:           fixedOpen(perMinute(ScopeUser, 120)),
		vm1.APIRouteDialogsList:            fixedOpen(perMinute(ScopeUser, 60)),
		vm1.APIRouteDialogsCreate:          slidingClosed(perMinute(ScopeUser, 10)),
		vm1.APIRouteAttachmentsInit:        slidingClosed(perMinute(ScopeUser, 20)),
		vm1.APIRouteAttachmentsDownloadURL: slidingClosed(perMinute(ScopeUser, 60)),
		vm1.APIRouteProfileGet:             fixedOpen(perMinute(ScopeUser, 60)),
		vm1.APIRouteProfileUpdate:          slidingClosed(perMinute(ScopeUser, 10)),
		vm1.APIRouteHistoryGet:             fixedOpen(perMinute(ScopeUser, 60)),
		vm1.APIRoutePublicGet:              local(FixedWindow, perMinute(ScopeIP, 120)),
		vm1.APIRouteRealtimeConnect:        slidingClosed(perMinute(ScopeUser, 10), perMinute(ScopeIP, 30)),
		vm1.APIRouteInternalInbox:          {Algorithm: TokenBucket, Degraded: degraded.FailOpen, Limits: []Limit{perMinute(ScopeService, 600)}},
	}
}
