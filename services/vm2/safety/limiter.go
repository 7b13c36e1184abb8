package safety

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/prometheus/client_golang/prometheus"
)

// DegradedPolicy is what a caller's rate limit does while Redis is unavailable.
type DegradedPolicy int

// Degraded policies. The zero value is FailClosed: a caller is only let through
// without Redis when the service chose so.
const (
	// FailClosed denies every request of the caller while Redis is unavailable.
	FailClosed DegradedPolicy = iota
	// FailOpen lets the caller through a local limiter of LocalLimit units per Window
	// in this process while Redis is unavailable.
	FailOpen
)

func (p DegradedPolicy) String() string {
	switch p {
	case FailClosed:
		return "fail-closed"
	case FailOpen:
		return "fail-open"
	}
	return fmt.Sprintf("DegradedPolicy(%d)", int(p))
}

// CallerPolicy is the rate limit of one calling service.
type CallerPolicy struct {
	// Limit is how many units the caller may spend per Window, 1..1000000.
	Limit int64
	// Window is the fixed window, whole seconds from 1s to 24h; it opens with the
	// caller's first request.
	Window time.Duration
	// MaxJitter, 0..2s, adds a random extra of up to this much to each window's
	// expiry (whole milliseconds), so windows of many callers do not end together.
	MaxJitter time.Duration
	// Degraded is what happens while Redis is unavailable.
	Degraded DegradedPolicy
	// LocalLimit is, for FailOpen, how many units this process lets the caller spend
	// per Window without Redis: 1..Limit. It must be 0 for FailClosed.
	LocalLimit int64
}

// DecisionSource says who decided.
type DecisionSource string

// Decision sources; each is also a source label of han_safety_rate_limit_decisions_total.
const (
	SourceRedis  DecisionSource = "redis"  // the shared counter in Redis
	SourceLocal  DecisionSource = "local"  // FailOpen's local limiter, Redis unavailable
	SourceClosed DecisionSource = "closed" // FailClosed, Redis unavailable
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
	c       *Client
	callers map[string]*caller
}

type caller struct {
	name   string
	policy CallerPolicy
	key    vm2.SafetyRLServiceKey
	local  localWindow
	// decisions[source][allowed] are this caller's metric series.
	decisions map[DecisionSource][2]prometheus.Counter
}

// NewLimiter makes a Limiter for the named callers (each 1..32 characters of
// [A-Za-z0-9._-]). A call for any other caller is refused with ErrUnknownCaller,
// so metric labels stay bounded by this list.
func NewLimiter(c *Client, callers map[string]CallerPolicy) (*Limiter, error) {
	if c == nil {
		return nil, errors.New("safety: NewLimiter: nil Client")
	}
	l := &Limiter{c: c, callers: make(map[string]*caller, len(callers))}
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
		case p.Degraded == FailOpen && (p.LocalLimit < 1 || p.LocalLimit > p.Limit):
			return nil, bad("FailOpen needs LocalLimit in 1..Limit")
		case p.Degraded == FailClosed && p.LocalLimit != 0:
			return nil, bad("FailClosed takes no LocalLimit")
		case p.Degraded != FailOpen && p.Degraded != FailClosed:
			return nil, bad("unknown degraded policy")
		}
		key, err := vm2.NewSafetyRLServiceKey(name, int64(p.Window/time.Second))
		if err != nil {
			return nil, fmt.Errorf("safety: NewLimiter: %w", err)
		}
		cl := &caller{name: name, policy: p, key: key, decisions: map[DecisionSource][2]prometheus.Counter{}}
		for _, s := range []DecisionSource{SourceRedis, SourceLocal, SourceClosed} {
			cl.decisions[s] = [2]prometheus.Counter{
				c.m.rateDecisions.WithLabelValues(name, decisionDenied, string(s)),
				c.m.rateDecisions.WithLabelValues(name, decisionAllowed, string(s)),
			}
		}
		l.callers[name] = cl
	}
	return l, nil
}

// Allow spends cost units of caller's limit, 1..Limit. While Redis is unavailable the
// caller's DegradedPolicy decides, and the call still returns within
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
	d, err := call(ctx, l.c, l.c.opts.RateLimitTimeout, func(ctx context.Context) (vm2.RateDecision, error) {
		return l.c.scripts.SafetyRateLimit(ctx, cl.key, vm2.SafetyRateLimitArgs{Limit: p.Limit, Window: p.Window, Jitter: jitter, Cost: cost})
	})
	var out Decision
	switch {
	case err == nil:
		out = Decision{Allowed: d.Allowed, Remaining: d.Remaining, RetryAfter: d.RetryAfter, ResetAt: d.ResetAt, Source: SourceRedis}
	case !errors.Is(err, errUnavailable):
		return Decision{}, fmt.Errorf("safety: rate limit of caller %s: %w", cl.name, err)
	case p.Degraded == FailOpen:
		out = cl.local.allow(l.c.opts.Now(), p.LocalLimit, p.Window, cost)
	default:
		retry := l.c.retryIn()
		out = Decision{RetryAfter: retry, ResetAt: l.c.opts.Now().Add(retry), Source: SourceClosed}
	}
	allowed := 0
	if out.Allowed {
		allowed = 1
	}
	cl.decisions[out.Source][allowed].Inc()
	return out, nil
}

// retryIn is how long until a call may try Redis again, at least 1 ms.
func (c *Client) retryIn() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.nextTry.Sub(c.opts.Now()), time.Millisecond)
}

// localWindow is FailOpen's limiter: a fixed window in this process that, like the
// script, opens with its first request.
type localWindow struct {
	mu    sync.Mutex
	start time.Time
	used  int64
}

func (w *localWindow) allow(now time.Time, limit int64, window time.Duration, cost int64) Decision {
	w.mu.Lock()
	defer w.mu.Unlock()
	end := w.start.Add(window)
	if w.start.IsZero() || !now.Before(end) {
		w.start, w.used, end = now, 0, now.Add(window)
	}
	if w.used+cost > limit {
		return Decision{Remaining: limit - w.used, RetryAfter: end.Sub(now), ResetAt: end, Source: SourceLocal}
	}
	w.used += cost
	return Decision{Allowed: true, Remaining: limit - w.used, ResetAt: end, Source: SourceLocal}
}
