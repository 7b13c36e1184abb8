// Package ratelimit is Elang's rate limiter (Elang Redis doc, seed 003: rate
// limits on the deployment prefix). Each named limit runs one of the
// algorithms of HAN's VM1 limiter, as the same Lua (lua/elang/
// elang_rate_limit_fixed.lua and elang_rate_limit_sliding.lua): a fixed
// window counter, or a sliding window of request timestamps. Decisions carry
// the exact Retry-After.
//
// Buckets live under the deployment prefix, so a new prefix starts every
// limit afresh; the subject (an account, an IP) enters the key only as an
// HMAC with the deployment's secret. A Redis failure is reported
// (ErrUnavailable, elang_ratelimit_failures_total): the limiter never decides
// from state of this process, and the caller answers with a controlled
// service error.
package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Errors of the limiter; each is matched with errors.Is.
var (
	// ErrInvalid: a limit, subject or option refused before any I/O.
	ErrInvalid = errors.New("ratelimit: invalid argument")
	// ErrUnknownLimit: Allow named a limit New was not given.
	ErrUnknownLimit = errors.New("ratelimit: unknown limit")
	// ErrUnavailable: Redis could not answer; no decision was made.
	ErrUnavailable = errors.New("ratelimit: redis unavailable")
)

// Algorithm is how a limit counts.
type Algorithm string

const (
	// Fixed counts requests in windows that start with their first request (INCRBY).
	Fixed Algorithm = "fixed"
	// Sliding counts the requests of the last Window (a ZSET of timestamps); at
	// most 10000 a window.
	Sliding Algorithm = "sliding"
)

// Limit is one named limit: at most Limit units per Window (whole seconds,
// 1s..24h).
type Limit struct {
	Name      string // [A-Za-z0-9._-], 1..64: the label of metrics and keys
	Algorithm Algorithm
	Limit     int64
	Window    time.Duration
}

// Decision is the limiter's answer.
type Decision struct {
	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration // 0 when allowed; else the exact wait until the cost fits
	ResetAt    time.Time     // when the window is empty again
}

// Options tune a Limiter. The zero value is usable.
type Options struct {
	// MaxJitter is the most a bucket's TTL outlives its window (spreads
	// expiries), 0..2s; zero means 1s.
	MaxJitter time.Duration
	// Timeout bounds each call to Redis; zero means 500ms. It bounds a call to
	// a hung server only when the client has ContextTimeoutEnabled.
	Timeout time.Duration
	// Registerer receives the metrics; nil: counted but exported nowhere.
	Registerer prometheus.Registerer
	// Logger receives a warning per Redis failure (never a subject); nil means slog.Default().
	Logger *slog.Logger
}

// Limiter decides the limits of one deployment prefix. It is safe for
// concurrent use.
type Limiter struct {
	s         *elang.Scripts
	p         elang.Prefix
	hmac      secrets.HMACKey
	limits    map[string]Limit
	jitter    time.Duration
	timeout   time.Duration
	log       *slog.Logger
	decisions *prometheus.CounterVec
	failures  *prometheus.CounterVec
}

// New returns the limiter of limits in the Redis rdb reaches (database 0),
// under prefix p, hashing subjects with key. It fails on an invalid limit or
// option.
func New(rdb redis.Scripter, p elang.Prefix, key secrets.HMACKey, limits []Limit, o Options) (*Limiter, error) {
	if rdb == nil {
		return nil, fmt.Errorf("ratelimit: %w: no redis client (limits have no local fallback)", ErrInvalid)
	}
	if key.IsZero() {
		return nil, fmt.Errorf("ratelimit: %w: the zero HMAC key", ErrInvalid)
	}
	if o.MaxJitter == 0 {
		o.MaxJitter = time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("ratelimit: %w: Timeout %s: want zero or positive", ErrInvalid, o.Timeout)
	}
	if o.MaxJitter < 0 || o.MaxJitter > elang.ElangRLMaxJitter {
		return nil, fmt.Errorf("ratelimit: %w: MaxJitter %s: want 0..%s", ErrInvalid, o.MaxJitter, elang.ElangRLMaxJitter)
	}
	s, err := elang.NewScripts(elang.Clients{DB0: rdb}, elang.WithPrefix(p))
	if err != nil {
		return nil, fmt.Errorf("ratelimit: %w: %w", ErrInvalid, err)
	}
	l := &Limiter{s: s, p: p, hmac: key, limits: map[string]Limit{}, jitter: o.MaxJitter, timeout: o.Timeout, log: o.Logger}
	for i, lim := range limits {
		max := int64(1000000)
		if lim.Algorithm == Sliding {
			max = 10000
		}
		switch {
		case lim.Algorithm != Fixed && lim.Algorithm != Sliding:
			return nil, fmt.Errorf("ratelimit: %w: limits[%d] %q: algorithm %q: want fixed or sliding", ErrInvalid, i, lim.Name, lim.Algorithm)
		case lim.Limit < 1 || lim.Limit > max:
			return nil, fmt.Errorf("ratelimit: %w: limits[%d] %q: limit %d: want 1..%d", ErrInvalid, i, lim.Name, lim.Limit, max)
		case lim.Window < time.Second || lim.Window > 24*time.Hour || lim.Window%time.Second != 0:
			return nil, fmt.Errorf("ratelimit: %w: limits[%d] %q: window %s: want whole seconds, 1s..24h", ErrInvalid, i, lim.Name, lim.Window)
		}
		if _, err := elang.NewElangRLKey(p, lim.Name, key.Sum("x"), int64(lim.Window/time.Second)); err != nil {
			return nil, fmt.Errorf("ratelimit: %w: limits[%d]: name %q: want 1..64 of [A-Za-z0-9._-]", ErrInvalid, i, lim.Name)
		}
		if _, dup := l.limits[lim.Name]; dup {
			return nil, fmt.Errorf("ratelimit: %w: limits[%d]: %q twice", ErrInvalid, i, lim.Name)
		}
		l.limits[lim.Name] = lim
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	set := promreg.On(o.Registerer)
	l.decisions = set.CounterVec("elang_ratelimit_decisions_total", "Rate-limit decisions by limit and result (allowed, denied, failure).", "limit", "result")
	l.failures = set.CounterVec("elang_ratelimit_failures_total", "Rate-limit calls Redis could not serve, by limit: the caller got ErrUnavailable. Alert on any increase.", "limit")
	if err := set.Err(); err != nil {
		return nil, fmt.Errorf("ratelimit: metrics: %w", err)
	}
	return l, nil
}

func random() (uint64, string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:8]), hex.EncodeToString(b[:])
}

// Allow charges one unit of limit for subject and decides.
func (l *Limiter) Allow(ctx context.Context, limit, subject string) (Decision, error) {
	return l.AllowN(ctx, limit, subject, 1)
}

// AllowN charges cost units (1..the limit) of limit for subject and decides;
// a denied request charges nothing.
func (l *Limiter) AllowN(ctx context.Context, limit, subject string, cost int64) (Decision, error) {
	lim, ok := l.limits[limit]
	if !ok {
		return Decision{}, fmt.Errorf("%w %q", ErrUnknownLimit, limit)
	}
	if subject == "" || cost < 1 || cost > lim.Limit {
		return Decision{}, fmt.Errorf("ratelimit %s: %w: want a subject and 1 <= cost <= %d", limit, ErrInvalid, lim.Limit)
	}
	key, err := elang.NewElangRLKey(l.p, lim.Name, l.hmac.Sum(subject), int64(lim.Window/time.Second))
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit %s: %w: %w", limit, ErrInvalid, err)
	}
	r, nonce := random()
	jitter := time.Duration(r%uint64(l.jitter/time.Millisecond+1)) * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	var d elang.RateDecision
	if lim.Algorithm == Fixed {
		d, err = l.s.ElangRateLimitFixed(ctx, key, elang.ElangRateLimitFixedArgs{Limit: lim.Limit, Window: lim.Window, Jitter: jitter, Cost: cost})
	} else {
		d, err = l.s.ElangRateLimitSliding(ctx, key, elang.ElangRateLimitSlidingArgs{Limit: lim.Limit, Window: lim.Window, Jitter: jitter, Cost: cost, Nonce: nonce})
	}
	if err != nil {
		l.decisions.WithLabelValues(limit, "failure").Inc()
		l.failures.WithLabelValues(limit).Inc()
		l.log.Warn("elang ratelimit: redis failure", "limit", limit, "prefix", l.p.String(), "err", err)
		return Decision{}, fmt.Errorf("ratelimit %s: %w: %w", limit, ErrUnavailable, err)
	}
	if d.Allowed {
		l.decisions.WithLabelValues(limit, "allowed").Inc()
	} else {
		l.decisions.WithLabelValues(limit, "denied").Inc()
	}
	return Decision{Allowed: d.Allowed, Remaining: d.Remaining, RetryAfter: d.RetryAfter, ResetAt: d.ResetAt}, nil
}
