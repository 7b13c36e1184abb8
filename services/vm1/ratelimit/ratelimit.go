// Package ratelimit is the rate limiter api-backend handlers call (seed 000 §3,
// §10, §11): Allow(ctx, subject, route) evaluates every limit the route's policy
// sets for the subject in VM1 DB0, through the generated wrappers of the
// sliding-window, fixed-window and token-bucket scripts, and returns a Decision
// whose Retry-After is exact to the millisecond.
//
// Routes come only from the api_route allow-list of keyspec.yaml and are hashed
// into keys by the generated builders, so an unknown route is an error and never
// a new key. Client addresses enter keys only as an HMAC made with the service's
// secret. A Policy binds each route to one algorithm and gives each limit a key of
// its own, so two algorithms never share a key; a bucket an older policy left
// under another algorithm is disposable, and the scripts replace it.
//
// A request is charged only when all limits of its route allow it: a denial
// gives back what the earlier limits took (refund scripts), so limits stay
// exact on routes with several of them.
//
// When Redis cannot answer (degraded.Unavailable: down, timed out, the caller's
// deadline, loading, out of memory), the route's degraded.Policy decides: fail
// closed with an error matching ErrUnavailable (503), fail open under the edge's
// limits, or a bounded local limiter (degraded.Limiter). A refusal (NOPERM, a script error, a reply
// of the wrong shape) and the caller's own cancellation are errors, never a
// degraded decision. Decisions are counted by route, scope and result, never by
// subject, on the Registerer of Options.
package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/prometheus/client_golang/prometheus"
)

// Errors callers match with errors.Is. Each returned error also names the route
// (a label from the allow-list), never a subject.
var (
	// ErrUnknownRoute: the route is not a value of enum api_route.
	ErrUnknownRoute = errors.New("route outside the api_route allow-list")
	// ErrNoPolicy: the route is in the allow-list but the policy sets no limits for it.
	ErrNoPolicy = errors.New("route has no rate-limit policy")
	// ErrMissingSubject: a limit of the route needs a part of the Subject that is empty.
	ErrMissingSubject = errors.New("subject lacks a part the route's limits need")
	// ErrInvalidSubject: a part of the Subject is malformed (not a UUID, not a name).
	ErrInvalidSubject = errors.New("malformed subject")
	// ErrInvalidCost: the cost is below 1 or above a limit of the route.
	ErrInvalidCost = errors.New("invalid cost")
	// ErrUnavailable: Redis could not answer and the route fails closed; answer 503.
	ErrUnavailable = errors.New("rate limiter unavailable")
)

// Subject is who a request comes from. Fill the parts the routes' limits need:
// a limit whose part is empty is an error, never skipped.
type Subject struct {
	// UserID is the authenticated user's canonical lower-case UUID.
	UserID string
	// IP is the client address. It is hashed with the limiter's secret; an IPv6
	// address counts by its /64 prefix, which one client usually owns whole.
	IP netip.Addr
	// DialogID is the dialog's canonical lower-case UUID (message sends).
	DialogID string
	// Service is the authenticated internal service name ([A-Za-z0-9._-], at most 32).
	Service string
}

// Decision is the outcome of Allow. When several limits apply, it describes the
// one that decided: of the limits that deny, the one that denies longest (its
// RetryAfter is when all of them allow the request), or else the one with the
// fewest units remaining.
type Decision struct {
	// Allowed reports whether the request may proceed.
	Allowed bool
	// Scope and Limit, Window describe the deciding limit.
	Scope  Scope
	Limit  int64
	Window time.Duration
	// Remaining is the units still available in the deciding limit.
	Remaining int64
	// RetryAfter is 0 when allowed; else the exact wait until the cost fits.
	RetryAfter time.Duration
	// ResetAt is when the deciding limit is full again, on the Redis clock.
	ResetAt time.Time
	// ResetAfter is ResetAt less the limiter's clock at the decision, at least 0.
	ResetAfter time.Duration
	// Degraded reports a decision made without Redis, by the route's degraded.Policy.
	Degraded bool
}

// Options configure a Limiter. The zero value suits a policy without ip limits.
type Options struct {
	// IPKey hashes client addresses; required when a limit has ScopeIP. Build it
	// with secrets.NewHMACKey from a secret in the service's config.
	IPKey secrets.HMACKey
	// Registerer receives han_api_ratelimit_decisions_total and
	// han_api_ratelimit_refund_failures_total. Nil registers them nowhere: the
	// decisions are counted but exported nowhere.
	Registerer prometheus.Registerer
	// MaxJitter bounds the random time added to each bucket's TTL (spreads
	// expiries); 0 means none, at most vm1.APIRLUserMaxJitter (2 s).
	MaxJitter time.Duration
	// LocalMaxEntries bounds the LocalLimit table (default 10000); a full table
	// denies new subjects.
	LocalMaxEntries int
	// LocalDivisor divides each limit for the LocalLimit fallback, e.g. the number
	// of api-backend instances (default 1).
	LocalDivisor int64
	// Now is the limiter's clock (default time.Now); tests on the harness pass
	// the fake clock's Now.
	Now func() time.Time
}

// Limiter applies a Policy. It is safe for concurrent use.
type Limiter struct {
	scripts   *vm1.Scripts
	policy    Policy
	ipKey     secrets.HMACKey
	metrics   *metrics
	jitterMS  int64
	now       func() time.Time
	local     *degraded.Limiter[localKey]
	divisor   int64
	noncePfx  string
	nonceNext atomic.Uint64
}

// localKey is one window of the LocalLimit fallback.
type localKey struct {
	route  vm1.APIRoute
	scope  Scope
	window time.Duration
	id     string // the subject part of the Redis key: a UUID, an HMAC or a service name
}

// New returns a Limiter that applies policy through scripts (which need a DB0
// client). It validates policy and o: an invalid policy is a *PolicyError.
func New(scripts *vm1.Scripts, policy Policy, o Options) (*Limiter, error) {
	if scripts == nil {
		scripts = &vm1.Scripts{} // every call fails with runtime.ErrNoClient
	}
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	if o.MaxJitter < 0 || o.MaxJitter > vm1.APIRLUserMaxJitter {
		return nil, fmt.Errorf("ratelimit: MaxJitter %s: want 0..%s (keyspec.yaml max_jitter)", o.MaxJitter, vm1.APIRLUserMaxJitter)
	}
	own := make(Policy, len(policy))
	needIPKey := false
	for r, rt := range policy {
		rt.Limits = append([]Limit(nil), rt.Limits...)
		rt.Degraded = rt.Degraded.OrFailClosed()
		for _, l := range rt.Limits {
			needIPKey = needIPKey || l.Scope == ScopeIP
		}
		own[r] = rt
	}
	if needIPKey && o.IPKey.IsZero() {
		return nil, errors.New("ratelimit: the policy has ip limits but Options.IPKey is the zero key; build it with secrets.NewHMACKey")
	}
	if o.LocalMaxEntries < 0 || o.LocalDivisor < 0 {
		return nil, errors.New("ratelimit: LocalMaxEntries and LocalDivisor must not be negative")
	}
	if o.LocalMaxEntries == 0 {
		o.LocalMaxEntries = 10000
	}
	if o.LocalDivisor == 0 {
		o.LocalDivisor = 1
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: metrics: %w", err)
	}
	var pfx [12]byte
	if _, err := rand.Read(pfx[:]); err != nil {
		return nil, fmt.Errorf("ratelimit: nonce prefix: %w", err)
	}
	return &Limiter{
		scripts:  scripts,
		policy:   own,
		ipKey:    o.IPKey,
		metrics:  m,
		jitterMS: o.MaxJitter.Milliseconds(),
		now:      o.Now,
		local:    degraded.NewLimiter[localKey](o.LocalMaxEntries),
		divisor:  o.LocalDivisor,
		noncePfx: base64.RawURLEncoding.EncodeToString(pfx[:]) + "-",
	}, nil
}

// Allow takes one unit from every limit of route for s, in the policy's order.
// A request is charged only when every limit allows it: when a limit denies,
// what the earlier limits took is given back (refund scripts), so a denied
// request leaves no charge anywhere, and the later limits are only peeked, so
// that RetryAfter is the first moment all of them allow it. Decisions are
// counted in the metrics; peeks are not.
func (l *Limiter) Allow(ctx context.Context, s Subject, route vm1.APIRoute) (Decision, error) {
	return l.eval(ctx, s, route, 1, false)
}

// AllowN takes cost units (a weighted request) from every limit of route for s.
// A cost above a limit of the route is ErrInvalidCost: it could never be allowed.
func (l *Limiter) AllowN(ctx context.Context, s Subject, route vm1.APIRoute, cost int64) (Decision, error) {
	return l.eval(ctx, s, route, cost, false)
}

// Peek evaluates cost units against every limit of route for s without taking
// them and without writing to Redis.
func (l *Limiter) Peek(ctx context.Context, s Subject, route vm1.APIRoute, cost int64) (Decision, error) {
	return l.eval(ctx, s, route, cost, true)
}

// bucket is a key every rate-limit script takes; dialog keys are not token-bucket
// keys, which eval checks before any call.
type bucket interface {
	vm1.RateLimitSlidingBucket
	vm1.RateLimitFixedBucket
	vm1.RateLimitSlidingRefundBucket
	vm1.RateLimitFixedRefundBucket
}

// charge is what one limit took for the request being evaluated: enough to give
// it back (the sliding window's nonce is the request's, the same on every key).
type charge struct {
	key     bucket
	limit   Limit
	resetAt time.Time
}

func (l *Limiter) eval(ctx context.Context, s Subject, route vm1.APIRoute, cost int64, peek bool) (Decision, error) {
	if !route.Valid() {
		return Decision{}, fmt.Errorf("ratelimit: %w", ErrUnknownRoute)
	}
	rt, ok := l.policy[route]
	if !ok {
		return Decision{}, fmt.Errorf("ratelimit %s: %w", route, ErrNoPolicy)
	}
	if !rt.Algorithm.Valid() { // New validated the policy; this guards the switches below
		return Decision{}, fmt.Errorf("ratelimit %s: unknown algorithm %q", route, rt.Algorithm)
	}
	keys := make([]bucket, len(rt.Limits))
	ids := make([]string, len(rt.Limits))
	for i, lim := range rt.Limits {
		if cost < 1 || cost > lim.Limit {
			return Decision{}, fmt.Errorf("ratelimit %s: cost %d with a %s limit of %d: %w", route, cost, lim.Scope, lim.Limit, ErrInvalidCost)
		}
		k, id, err := l.key(s, route, lim)
		if err != nil {
			return Decision{}, fmt.Errorf("ratelimit %s: %s limit: %w", route, lim.Scope, err)
		}
		if _, ok := k.(vm1.RateLimitTokenBucketBucket); rt.Algorithm == TokenBucket && !ok {
			// Validate refuses such a policy; this guards the type assertions.
			return Decision{}, fmt.Errorf("ratelimit %s: %s limit: not a token-bucket key", route, lim.Scope)
		}
		keys[i], ids[i] = k, id
	}
	observe := func(scope Scope, result string) {
		if !peek {
			l.metrics.observe(route, scope, result)
		}
	}
	var nonce string
	if rt.Algorithm == SlidingWindow {
		nonce = l.nonce()
	}
	var charged []charge // what to give back if a later limit denies
	var out Decision
	for i, lim := range rt.Limits {
		d, err := l.run(ctx, rt.Algorithm, keys[i], lim, cost, peek, nonce)
		if err != nil {
			err = ownCancel(ctx, err)
			if !degraded.Unavailable(err) {
				// The caller gave up, or Redis refused the call (NOPERM, a script
				// error, a reply of the wrong shape): no degraded mode may hide
				// that. What earlier limits took is given back.
				l.refund(ctx, route, rt.Algorithm, cost, nonce, charged)
				return Decision{}, fmt.Errorf("ratelimit %s: %s limit: %w", route, lim.Scope, err)
			}
			// Redis cannot answer (down, timed out, the caller's deadline,
			// loading, out of memory): the route's degraded mode decides, for
			// the whole route, since a partial Redis decision mixed with a local
			// one would be neither. Earlier charges stay: refunds would meet the
			// same outage, and a charge left behind only errs on the safe side.
			if rt.Degraded == degraded.FailClosed {
				observe(lim.Scope, resultUnavailable)
				return Decision{}, fmt.Errorf("ratelimit %s: %w: %w", route, ErrUnavailable, err)
			}
			d := l.withoutRedis(route, rt, ids, cost, peek)
			result := resultDegradedDenied
			if d.Allowed {
				result = resultDegradedAllowed
			}
			observe(d.Scope, result)
			return d, nil
		}
		dec := l.decision(lim, d)
		if !dec.Allowed {
			l.refund(ctx, route, rt.Algorithm, cost, nonce, charged)
			dec = l.latest(ctx, rt, keys, i, dec, cost, nonce)
			observe(dec.Scope, resultDenied)
			return dec, nil
		}
		if !peek && i < len(rt.Limits)-1 {
			charged = append(charged, charge{key: keys[i], limit: lim, resetAt: d.ResetAt})
		}
		if i == 0 || dec.Remaining < out.Remaining {
			out = dec
		}
	}
	observe(out.Scope, resultAllowed)
	return out, nil
}

// ownCancel makes err match context.Canceled when the caller cancelled ctx,
// also when the client reported something else (a read timeout it waited
// for): giving up is the caller's doing, never an outage.
func ownCancel(ctx context.Context, err error) error {
	if cerr := ctx.Err(); errors.Is(cerr, context.Canceled) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

func (l *Limiter) decision(lim Limit, d vm1.RateDecision) Decision {
	return Decision{
		Allowed:    d.Allowed,
		Scope:      lim.Scope,
		Limit:      lim.Limit,
		Window:     lim.Window,
		Remaining:  d.Remaining,
		RetryAfter: d.RetryAfter,
		ResetAt:    d.ResetAt,
		ResetAfter: max(d.ResetAt.Sub(l.now()), 0),
	}
}

// latest peeks the limits after the one that denied (denied, at index i) and
// returns the denial that lasts longest: a request waits until every limit
// allows it, and each limit, once it allows a cost, keeps allowing it while
// nothing else is charged. A peek that fails leaves the denial as it is.
func (l *Limiter) latest(ctx context.Context, rt Route, keys []bucket, i int, denied Decision, cost int64, nonce string) Decision {
	for j := i + 1; j < len(rt.Limits); j++ {
		d, err := l.run(ctx, rt.Algorithm, keys[j], rt.Limits[j], cost, true, nonce)
		if err != nil {
			return denied
		}
		if dec := l.decision(rt.Limits[j], d); !dec.Allowed && dec.RetryAfter > denied.RetryAfter {
			denied = dec
		}
	}
	return denied
}

// refundTimeout bounds the refunds of one request: they run even when the
// caller has gone away, since the charges would otherwise stay.
const refundTimeout = time.Second

// refund gives back what the charged limits took for a request that is not
// allowed after all. A refund that fails leaves its charge (the safe side) and
// is counted.
func (l *Limiter) refund(ctx context.Context, route vm1.APIRoute, alg Algorithm, cost int64, nonce string, charged []charge) {
	if len(charged) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refundTimeout)
	defer cancel()
	for _, c := range charged {
		var err error
		switch alg {
		case SlidingWindow:
			_, err = l.scripts.RateLimitSlidingRefund(ctx, c.key, vm1.RateLimitSlidingRefundArgs{Cost: cost, Nonce: nonce})
		case FixedWindow:
			_, err = l.scripts.RateLimitFixedRefund(ctx, c.key, vm1.RateLimitFixedRefundArgs{
				Cost: cost, Window: c.limit.Window, ResetAt: c.resetAt.UnixMilli(),
			})
		case TokenBucket:
			tk, _ := c.key.(vm1.RateLimitTokenBucketRefundBucket) // a nil key is the wrapper's ErrInvalidArg
			_, err = l.scripts.RateLimitTokenBucketRefund(ctx, tk, vm1.RateLimitTokenBucketRefundArgs{
				Limit: c.limit.Limit, Window: c.limit.Window, Cost: cost, ResetAt: c.resetAt.UnixMilli(),
			})
		}
		if err != nil {
			l.metrics.refundFailed(route, c.limit.Scope)
		}
	}
}

// withoutRedis decides without Redis, by the route's policy (FailOpen or
// LocalLimit; eval handled FailClosed).
func (l *Limiter) withoutRedis(route vm1.APIRoute, rt Route, ids []string, cost int64, peek bool) Decision {
	if rt.Degraded == degraded.FailOpen {
		lim := rt.Limits[0]
		return Decision{Allowed: true, Scope: lim.Scope, Limit: lim.Limit, Window: lim.Window, Remaining: lim.Limit, Degraded: true}
	}
	now := l.now()
	limits := make([]degraded.Limit[localKey], len(rt.Limits))
	for i, lim := range rt.Limits {
		limits[i] = degraded.Limit[localKey]{
			Key:    localKey{route: route, scope: lim.Scope, window: lim.Window, id: ids[i]},
			Units:  max(lim.Limit/l.divisor, 1),
			Window: lim.Window,
		}
	}
	var d degraded.Decision
	if peek {
		d = l.local.Peek(now, limits, cost)
	} else {
		d = l.local.Allow(now, limits, cost)
	}
	lim := rt.Limits[d.Index]
	return Decision{
		Allowed:    d.Allowed,
		Scope:      lim.Scope,
		Limit:      limits[d.Index].Units,
		Window:     lim.Window,
		Remaining:  d.Remaining,
		RetryAfter: d.RetryAfter,
		ResetAt:    d.ResetAt,
		ResetAfter: max(d.ResetAt.Sub(now), 0),
		Degraded:   true,
	}
}

// key builds the limit's key for s; id is the subject part of the key (a UUID,
// an HMAC or a service name), for the local fallback.
func (l *Limiter) key(s Subject, route vm1.APIRoute, lim Limit) (bucket, string, error) {
	window := int64(lim.Window / time.Second)
	var (
		k   bucket
		id  string
		err error
	)
	switch lim.Scope {
	case ScopeUser:
		if s.UserID == "" {
			return nil, "", ErrMissingSubject
		}
		id = s.UserID
		k, err = vm1.NewAPIRLUserKey(s.UserID, route, window)
	case ScopeIP:
		if !s.IP.IsValid() {
			return nil, "", ErrMissingSubject
		}
		h := l.ipKey.Sum(ipIdentity(s.IP))
		id = string(h)
		k, err = vm1.NewAPIRLIPKey(h, route, window)
	case ScopeDialog:
		if s.DialogID == "" {
			return nil, "", ErrMissingSubject
		}
		id = s.DialogID
		k, err = vm1.NewAPIRLDialogKey(s.DialogID, window)
	case ScopeService:
		if s.Service == "" {
			return nil, "", ErrMissingSubject
		}
		id = s.Service
		k, err = vm1.NewAPIRLServiceKey(s.Service, route, window)
	default:
		return nil, "", fmt.Errorf("unknown scope %q", lim.Scope)
	}
	if err != nil {
		// The builder's error names the key part, never its value.
		return nil, "", fmt.Errorf("%w: %w", ErrInvalidSubject, err)
	}
	return k, id, nil
}

// ipIdentity is the text hashed for an address: IPv4 (also when IPv4-mapped)
// as is, IPv6 as its /64 prefix, zones dropped.
func ipIdentity(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

func (l *Limiter) run(ctx context.Context, alg Algorithm, k bucket, lim Limit, cost int64, peek bool, nonce string) (vm1.RateDecision, error) {
	var jitter time.Duration
	if l.jitterMS > 0 {
		jitter = time.Duration(mrand.Int64N(l.jitterMS+1)) * time.Millisecond
	}
	switch alg {
	case SlidingWindow:
		return l.scripts.RateLimitSliding(ctx, k, vm1.RateLimitSlidingArgs{
			Limit: lim.Limit, Window: lim.Window, Jitter: jitter, Cost: cost, Peek: peek, Nonce: nonce,
		})
	case FixedWindow:
		return l.scripts.RateLimitFixed(ctx, k, vm1.RateLimitFixedArgs{
			Limit: lim.Limit, Window: lim.Window, Jitter: jitter, Cost: cost, Peek: peek,
		})
	case TokenBucket:
		tk, _ := k.(vm1.RateLimitTokenBucketBucket) // eval checked it; a nil key is the wrapper's ErrInvalidArg
		return l.scripts.RateLimitTokenBucket(ctx, tk, vm1.RateLimitTokenBucketArgs{
			Limit: lim.Limit, Window: lim.Window, Jitter: jitter, Cost: cost, Peek: peek,
		})
	}
	return vm1.RateDecision{}, fmt.Errorf("%w: algorithm %q", runtime.ErrInvalidArg, alg) // eval checked it
}

// nonce is unique per request in this process (a random prefix and a counter),
// so sliding-window members of concurrent requests never collide; one request
// uses one nonce on all of its keys, and its refunds remove exactly its members.
func (l *Limiter) nonce() string {
	return l.noncePfx + strconv.FormatUint(l.nonceNext.Add(1), 36)
}
