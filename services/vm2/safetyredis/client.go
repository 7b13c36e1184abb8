package safetyredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Default timeouts and retry interval of Options.
const (
	DefaultCacheTimeout     = 100 * time.Millisecond
	DefaultRateLimitTimeout = 100 * time.Millisecond
	DefaultPublishTimeout   = 100 * time.Millisecond
	DefaultProbeTimeout     = 500 * time.Millisecond
	DefaultRetryInterval    = time.Second
	DefaultMaxInFlight      = 64
)

// ErrInvalidOptions: Options New cannot use (a negative timeout, interval or
// MaxInFlight).
var ErrInvalidOptions = errors.New("invalid options")

// Options configure a Client. Zero fields take the defaults. The timeouts of
// the cache, the caller limiter and the waker are here, with the client every
// one of them runs on.
type Options struct {
	// CacheTimeout bounds each cache read or write (DefaultCacheTimeout).
	CacheTimeout time.Duration
	// RateLimitTimeout bounds each rate-limit evaluation (DefaultRateLimitTimeout).
	RateLimitTimeout time.Duration
	// PublishTimeout bounds each wake-up publish (DefaultPublishTimeout).
	PublishTimeout time.Duration
	// ProbeTimeout bounds the PING of Health (DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// RetryInterval is how often, while Redis is unreachable, one call tries it again;
	// every other call skips Redis at once (DefaultRetryInterval).
	RetryInterval time.Duration
	// MaxInFlight bounds the calls running on goroutines of their own (a client
	// without ContextTimeoutEnabled, see New), those whose caller has already
	// returned and that wait for go-redis's own timeouts included. A call that
	// finds them all busy waits for one within its timeout, and counts as Redis
	// unavailable if none frees up (DefaultMaxInFlight).
	MaxInFlight int
	// Registerer receives the metrics of the Client and of every Cache, Limiter
	// and Waker built on it. Nil registers them nowhere: the metrics are counted
	// but exported nowhere. Clients of one process may share it: they then
	// count together.
	Registerer prometheus.Registerer
	// Now is the clock of the degraded mode and of the local rate limiter (time.Now).
	Now func() time.Time
}

// Client is Message Safety's connection to its Redis (vm2, MESSAGE_SAFETY_REDIS_URL):
// it runs the generated vm2 scripts with a timeout per call and runs degraded while
// Redis is unreachable. Build a safetycache.Cache, a callerlimit.Limiter and a
// waker.Waker on it. It is safe for concurrent use.
type Client struct {
	rdb     redis.Scripter
	scripts *vm2.Scripts
	opts    Options
	m       metrics
	inline  bool          // rdb bounds each command by its context's deadline itself
	slots   chan struct{} // !inline: one token per call running on a goroutine of its own

	mu       sync.Mutex
	degraded bool
	since    time.Time // start of the current degraded period
	reason   string    // why Redis is unreachable: a class, never an address or a secret
	nextTry  time.Time // while degraded: when the next call may try Redis
}

// New makes a Client on rdb, a client of vm2's db0. Any go-redis client works (a
// *redis.Client, *redis.Ring, *redis.ClusterClient, or luatest's Scripter in tests);
// Health PINGs when rdb can, and a waker.Waker needs one that can PUBLISH and
// SUBSCRIBE.
// Every call returns within its timeout, or the caller's deadline when that is
// sooner, whatever rdb's own timeouts are; a call that Redis does not answer by
// then counts as Redis unavailable. Give a *redis.Client ContextTimeoutEnabled:
// go-redis then ends a hung call at the deadline itself and the call runs inline;
// otherwise it runs on a goroutine of its own (at most Options.MaxInFlight at a
// time) that returns at the deadline, while its connection stays busy until
// go-redis's ReadTimeout or WriteTimeout.
func New(rdb redis.Scripter, o Options) (*Client, error) {
	if rdb == nil {
		return nil, errors.New("safety: New: nil Redis client")
	}
	for _, d := range []*time.Duration{&o.CacheTimeout, &o.RateLimitTimeout, &o.PublishTimeout, &o.ProbeTimeout, &o.RetryInterval} {
		if *d < 0 {
			return nil, fmt.Errorf("safety: New: negative timeout or interval: %w", ErrInvalidOptions)
		}
	}
	if o.MaxInFlight < 0 {
		return nil, fmt.Errorf("safety: New: MaxInFlight %d: want zero or positive: %w", o.MaxInFlight, ErrInvalidOptions)
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.CacheTimeout, DefaultCacheTimeout)
	def(&o.RateLimitTimeout, DefaultRateLimitTimeout)
	def(&o.PublishTimeout, DefaultPublishTimeout)
	def(&o.ProbeTimeout, DefaultProbeTimeout)
	def(&o.RetryInterval, DefaultRetryInterval)
	if o.Now == nil {
		o.Now = time.Now
	}
	scripts, err := vm2.NewScripts(vm2.Clients{DB0: rdb})
	if err != nil {
		return nil, fmt.Errorf("safety: New: %w", err)
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("safety: New: metrics: %w", err)
	}
	return &Client{rdb: rdb, scripts: scripts, opts: o, m: m, inline: honorsDeadlines(rdb), slots: make(chan struct{}, o.MaxInFlight)}, nil
}

// honorsDeadlines reports whether rdb is a *redis.Client with ContextTimeoutEnabled,
// which bounds dialing, waiting for a connection, writing and reading by the
// context's deadline (degraded_test.go checks it on a hung server), so
// a call needs no goroutine of its own. Rings and cluster clients, which route and
// redirect, always get one.
func honorsDeadlines(rdb redis.Scripter) bool {
	c, ok := rdb.(*redis.Client)
	return ok && c.Options().ContextTimeoutEnabled
}

// ErrUnavailable marks a call that did not reach Redis, got no answer within its
// timeout, or was skipped because Redis is known to be unreachable: what Do
// returns for a call the degraded policy of its caller then answers.
var ErrUnavailable = errors.New("safety: Redis unavailable")

// unavailable keeps the class of an outage (for Health) without its text, which may
// name an address.
type unavailable struct{ reason string }

func (u *unavailable) Error() string        { return "safety: Redis unavailable (" + u.reason + ")" }
func (u *unavailable) Is(target error) bool { return target == ErrUnavailable }

// replyCode is the first word of an error reply Redis sent (through a script or
// not), and whether err is one: Redis answered, so it is reachable.
func replyCode(err error) (string, bool) {
	var se *runtime.ScriptError
	if errors.As(err, &se) {
		return se.Code, true
	}
	var re redis.Error
	if errors.As(err, &re) && !errors.Is(err, redis.Nil) && !errors.Is(err, redis.ErrClosed) {
		code, _, _ := strings.Cut(re.Error(), " ")
		return code, true
	}
	return "", false
}

// outage classifies err: whether Redis is unavailable for this call (reason "" when
// not), and whether that puts the Client into degraded mode. degraded.Unavailable
// decides what is an outage; this only names its class for Health.
func outage(err error) (reason string, trip bool) {
	if !degraded.Unavailable(err) {
		return "", false // an answer, a refusal of this call, or the caller's cancellation
	}
	var ne net.Error
	if code, ok := replyCode(err); ok {
		if code == "OOM" {
			return "out-of-memory", false // refuses writes; reads still work
		}
		return "busy", true // answering, but not serving data: LOADING, BUSY, ...
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout", true
	case errors.Is(err, redis.ErrClosed):
		return "closed", true
	}
	return "unreachable", true // network errors, EOF, pool timeouts
}

// allow reports whether a call may try Redis now: always while healthy; while
// degraded, one call per RetryInterval.
func (c *Client) allow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.degraded {
		return true
	}
	now := c.opts.Now()
	if now.Before(c.nextTry) {
		return false
	}
	c.nextTry = now.Add(c.opts.RetryInterval)
	return true
}

func (c *Client) fail(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	c.nextTry = now.Add(c.opts.RetryInterval)
	c.reason = reason
	if !c.degraded {
		c.degraded, c.since = true, now
		c.m.degraded.Set(1)
		c.m.degradations.Inc()
	}
}

func (c *Client) recovered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.degraded {
		c.degraded, c.since, c.reason = false, time.Time{}, ""
		c.m.degraded.Set(0)
	}
}

// Degraded reports whether the Client treats Redis as unreachable.
func (c *Client) Degraded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.degraded
}

// Do runs fn against c's Redis with a context that ends at timeout (or at the
// caller's deadline, when sooner) and returns by then whatever Redis does: inline
// when the client honours deadlines itself, else with fn on a goroutine of its own
// (at most MaxInFlight of them, counting those still stuck after their caller
// returned) whose hung connection is left to go-redis's own timeouts. While Redis
// is known to be unreachable, only one call per RetryInterval tries it.
//
// An error matching ErrUnavailable means Redis was not usable: it did not answer
// before either deadline (the caller's included: Redis was too slow for this
// caller, and the degraded policy applies), or could not be reached. Only the
// caller's own cancellation (context.Canceled) is returned as is: it says nothing
// about Redis.
func Do[T any](ctx context.Context, c *Client, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if !c.allow() {
		return zero, &unavailable{reason: c.currentReason()}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	var r result
	switch {
	case c.inline:
		r.v, r.err = fn(cctx)
		if r.err != nil && cctx.Err() != nil {
			r.err = cctx.Err()
		}
	default:
		select {
		case c.slots <- struct{}{}:
		case <-cctx.Done():
			r.err = cctx.Err() // every slot is taken by a call Redis has not answered
		}
		if r.err != nil {
			break
		}
		done := make(chan result, 1)
		go func() {
			defer func() { <-c.slots }()
			v, err := fn(cctx)
			done <- result{v, err}
		}()
		select {
		case r = <-done:
		case <-cctx.Done():
			r.err = cctx.Err()
		}
	}
	if r.err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return zero, ctx.Err() // the caller gave up: not Redis's fault
	}
	reason, trip := outage(r.err)
	switch {
	case reason != "" && trip:
		c.fail(reason)
		return zero, &unavailable{reason: reason}
	case reason != "":
		c.recovered() // Redis answered
		return zero, &unavailable{reason: reason}
	}
	if r.err == nil {
		c.recovered() // Redis answered
	} else if _, answered := replyCode(r.err); answered {
		c.recovered()
	}
	return r.v, r.err
}

// Scripts are the generated vm2 scripts on the Client's Redis client; run them
// through Do.
func (c *Client) Scripts() *vm2.Scripts { return c.scripts }

// Redis is the Redis client the Client was made on.
func (c *Client) Redis() redis.Scripter { return c.rdb }

// Options are the Client's options, defaults filled in.
func (c *Client) Options() Options { return c.opts }

// RetryIn is how long until a call may try Redis again (while degraded, one
// call per RetryInterval does), at least 1 ms.
func (c *Client) RetryIn() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.nextTry.Sub(c.opts.Now()), time.Millisecond)
}

func (c *Client) currentReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// HealthStatus is the state of Message Safety's Redis as the health probe reports it.
type HealthStatus string

// Health statuses. There is no "down": Redis is not a readiness gate (seed 004 §6),
// and Message Safety serves without it.
const (
	HealthOK       HealthStatus = "ok"
	HealthDegraded HealthStatus = "degraded"
)

// Health is one health probe's answer.
type Health struct {
	// Capability names what this report covers in the service's capability map.
	Capability string       `json:"capability"`
	Status     HealthStatus `json:"status"`
	// Critical is always false: readiness never waits for this Redis.
	Critical bool `json:"critical"`
	// Since is when the degraded period began (zero when ok).
	Since time.Time `json:"since,omitzero"`
	// Reason is the class of the outage: timeout, unreachable, busy, closed. Never an
	// address, a URL or a secret.
	Reason string `json:"reason,omitempty"`
}

// HealthCapability is Health.Capability.
const HealthCapability = "safety_redis_hot_cache"

// Health probes Redis with PING (bounded by ProbeTimeout) when the client can, so a
// probe both notices an outage and ends one, and reports ok or degraded. A client
// that cannot PING (luatest's Scripter) reports what the last calls saw.
func (c *Client) Health(ctx context.Context) Health {
	if p, ok := c.rdb.(interface {
		Ping(context.Context) *redis.StatusCmd
	}); ok {
		c.mu.Lock()
		c.nextTry = time.Time{} // a probe always tries
		c.mu.Unlock()
		_, _ = Do(ctx, c, c.opts.ProbeTimeout, func(ctx context.Context) (string, error) {
			return p.Ping(ctx).Result()
		})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h := Health{Capability: HealthCapability, Status: HealthOK}
	if c.degraded {
		h.Status, h.Since, h.Reason = HealthDegraded, c.since, c.reason
	}
	return h
}

// HealthHandler serves Health as JSON, always with status 200: Redis being degraded
// never fails a readiness check.
func (c *Client) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(c.Health(r.Context()))
	})
}

// metrics are the Client's own collectors: the degraded mode.
type metrics struct {
	degraded     prometheus.Gauge
	degradations prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (metrics, error) {
	s := promreg.On(reg)
	m := metrics{
		degraded:     s.Gauge("han_safety_redis_degraded", "1 while Message Safety's Redis is unreachable and its hot paths run degraded (seed 004 §6), else 0."),
		degradations: s.Counter("han_safety_redis_degradations_total", "Times Message Safety's Redis became unreachable."),
	}
	return m, s.Err()
}
