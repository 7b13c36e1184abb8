// Package callerlimit rate-limits Message Safety's calling services with the
// safety_rate_limit script on its Redis (vm2, seed 004 §4;
// han:safety:rl:service:{caller}:{window}), through a safetyredis.Client.
// While Redis is unavailable each caller gets the policy the service chose
// for it: fail-closed, or fail-open through a bounded local limiter.
//
// Metrics, on the Client's Registerer: han_safety_rate_limit_decisions_total
// by caller (the configured names only), decision and source.
package callerlimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/prometheus/client_golang/prometheus"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrInvalidPolicy: a caller's Policy the Limiter cannot use.
	ErrInvalidPolicy = errors.New("invalid policy")
	// ErrUnknownCaller: a rate-limit call for a caller the Limiter was not configured with.
	ErrUnknownCaller = errors.New("unknown rate-limited caller")
	// ErrInvalidCost: a rate-limit cost outside 1..the caller's limit.
	ErrInvalidCost = errors.New("invalid rate-limit cost")
)

// Decision labels of han_safety_rate_limit_decisions_total.
const (
	decisionAllowed = "allowed"
	decisionDenied  = "denied"
)

// Policy is the rate limit of one calling service.
type Policy struct {
	// Limit is how many units the caller may spend per Window, 1..1000000.
	Limit int64
	// Window is the fixed window, whole seconds from 1s to 24h; it opens with the
	// caller's first request.
	Window time.Duration
	// MaxJitter, 0..2s, adds a random extra of up to this much to each window's
	// expiry (whole milliseconds), so windows of many callers do not end together.
	MaxJitter time.Duration
	// Degraded is what happens while Redis is unavailable: degraded.FailClosed
	// (the zero value) denies every request of the caller; degraded.LocalLimit lets
	// the caller through a local limiter of LocalLimit units per Window in this
	// process. degraded.FailOpen, which would let a caller through unbounded, is
	// refused.
	Degraded degraded.Policy
	// LocalLimit is, for degraded.LocalLimit, how many units this process lets the
	// caller spend per Window without Redis: 1..Limit. It must be 0 otherwise.
	LocalLimit int64
}

// DecisionSource says who decided.
type DecisionSource string

// Decision sources; each is also a source label of han_safety_rate_limit_decisions_total.
const (
	SourceRedis  DecisionSource = "redis"  // the shared counter in Redis
	SourceLocal  DecisionSource = "local"  // degraded.LocalLimit's local limiter, Redis unavailable
	SourceClosed DecisionSource = "closed" // degraded.FailClosed, Redis unavailable
)

// Decision is a rate-limit decision; the first four fields follow VM1's limiter.
type Decision struct {
	Allowed   bool
	Remaining int64
	// RetryAfter is 0 when allowed; else the exact wait until the window resets (for
	// SourceClosed: until Redis is tried again).
	RetryAfter time.Duration
	// ResetAt is when the window is empty again.
	ResetAt time.Time
	Source  DecisionSource
}

// Limiter rate-limits Message Safety's callers with the safety_rate_limit script
// (han:safety:rl:service:{caller}:{window}). It is safe for concurrent use.
type Limiter struct {
	c       *safetyredis.Client
	scripts *vm2.Scripts
	timeout time.Duration    // the Client's RateLimitTimeout
	now     func() time.Time // the Client's clock
	callers map[string]*caller
	local   *degraded.Limiter[string] // one window per caller, keyed by its name
}

type caller struct {
	name   string
	policy Policy
	key    vm2.SafetyRLServiceKey
	// decisions[source][allowed] are this caller's metric series.
	decisions map[DecisionSource][2]prometheus.Counter
}

// New makes a Limiter on c for the named callers (each 1..32 characters of
// [A-Za-z0-9._-]). A call for any other caller is refused with ErrUnknownCaller,
// so metric labels stay bounded by this list.
func New(c *safetyredis.Client, callers map[string]Policy) (*Limiter, error) {
	if c == nil {
		return nil, errors.New("safety: callerlimit.New: nil Client")
	}
	o := c.Options()
	set := promreg.On(o.Registerer)
	decisions := set.CounterVec("han_safety_rate_limit_decisions_total",
		"Rate-limit decisions by caller, decision (allowed, denied) and source (redis, local: fail-open while Redis is unavailable, closed: fail-closed while it is).",
		"caller", "decision", "source")
	if err := set.Err(); err != nil {
		return nil, fmt.Errorf("safety: callerlimit.New: metrics: %w", err)
	}
	l := &Limiter{c: c, scripts: c.Scripts(), timeout: o.RateLimitTimeout, now: o.Now, callers: make(map[string]*caller, len(callers)), local: degraded.NewLimiter[string](len(callers))}
	for name, p := range callers {
		bad := func(reason string) error {
			return fmt.Errorf("safety: caller %s: %s: %w", name, reason, ErrInvalidPolicy)
		}
		switch {
		case p.Limit < 1 || p.Limit > 1000000:
			return nil, bad("Limit outside 1..1000000")
		case p.Window < time.Second || p.Window > 24*time.Hour || p.Window%time.Second != 0:
			return nil, bad("Window is not whole seconds in 1s..24h")
		case p.MaxJitter < 0 || p.MaxJitter > vm2.SafetyRLServiceMaxJitter:
			return nil, bad(fmt.Sprintf("MaxJitter outside 0..%s", vm2.SafetyRLServiceMaxJitter))
		case p.Degraded == degraded.FailOpen:
			return nil, bad("fail_open would let the caller through unbounded without Redis; use local_limit")
		case p.Degraded == degraded.LocalLimit && (p.LocalLimit < 1 || p.LocalLimit > p.Limit):
			return nil, bad("local_limit needs LocalLimit in 1..Limit")
		case p.Degraded.OrFailClosed() == degraded.FailClosed && p.LocalLimit != 0:
			return nil, bad("fail_closed takes no LocalLimit")
		case !p.Degraded.Valid():
			return nil, bad(fmt.Sprintf("unknown degraded policy %q", p.Degraded))
		}
		key, err := vm2.NewSafetyRLServiceKey(name, int64(p.Window/time.Second))
		if err != nil {
			return nil, fmt.Errorf("safety: callerlimit.New: %w", err)
		}
		cl := &caller{name: name, policy: p, key: key, decisions: map[DecisionSource][2]prometheus.Counter{}}
		for _, s := range []DecisionSource{SourceRedis, SourceLocal, SourceClosed} {
			cl.decisions[s] = [2]prometheus.Counter{
				decisions.WithLabelValues(name, decisionDenied, string(s)),
				decisions.WithLabelValues(name, decisionAllowed, string(s)),
			}
		}
		l.callers[name] = cl
	}
	return l, nil
}

// Allow spends cost units of caller's limit, 1..Limit. While Redis is unavailable the
// caller's degraded.Policy decides, and the call still returns within
// RateLimitTimeout (or by ctx's deadline, when sooner: Redis not answering by then
// counts as unavailable, and the policy decides). Errors: ErrUnknownCaller,
// ErrInvalidCost, the caller's own cancellation, a ctx that had already ended, and
// error replies of Redis (such as NOPERM), which no policy turns into a decision.
func (l *Limiter) Allow(ctx context.Context, callerName string, cost int64) (Decision, error) {
	cl, ok := l.callers[callerName]
	if !ok {
		return Decision{}, fmt.Errorf("safety: rate limit: %w", ErrUnknownCaller)
	}
	p := cl.policy
	if cost < 1 || cost > p.Limit {
		return Decision{}, fmt.Errorf("safety: rate limit of caller %s: cost %d outside 1..%d: %w", cl.name, cost, p.Limit, ErrInvalidCost)
	}
	var jitter time.Duration
	if p.MaxJitter >= time.Millisecond {
		jitter = time.Duration(rand.Int64N(int64(p.MaxJitter/time.Millisecond)+1)) * time.Millisecond
	}
	d, err := safetyredis.Do(ctx, l.c, l.timeout, func(ctx context.Context) (vm2.RateDecision, error) {
		return l.scripts.SafetyRateLimit(ctx, cl.key, vm2.SafetyRateLimitArgs{Limit: p.Limit, Window: p.Window, Jitter: jitter, Cost: cost})
	})
	var out Decision
	switch {
	case err == nil:
		out = Decision{Allowed: d.Allowed, Remaining: d.Remaining, RetryAfter: d.RetryAfter, ResetAt: d.ResetAt, Source: SourceRedis}
	case !errors.Is(err, safetyredis.ErrUnavailable):
		return Decision{}, fmt.Errorf("safety: rate limit of caller %s: %w", cl.name, err)
	case p.Degraded == degraded.LocalLimit:
		now := l.now()
		ld := l.local.Allow(now, []degraded.Limit[string]{{Key: cl.name, Units: p.LocalLimit, Window: p.Window}}, cost)
		out = Decision{Allowed: ld.Allowed, Remaining: ld.Remaining, RetryAfter: ld.RetryAfter, ResetAt: ld.ResetAt, Source: SourceLocal}
	default:
		retry := l.c.RetryIn()
		out = Decision{RetryAfter: retry, ResetAt: l.now().Add(retry), Source: SourceClosed}
	}
	allowed := 0
	if out.Allowed {
		allowed = 1
	}
	cl.decisions[out.Source][allowed].Inc()
	return out, nil
}
