// Package cache is the Elang application cache (Elang Redis doc, seed 003:
// "$cache->set('catalog.version', 4, 300)"): Get, Set and Delete of entries
// with a TTL, and Clear of this deployment prefix's entries only.
//
// The cache is an accelerator. A failure of its store (Redis down, hung, out
// of memory) reads as a miss, never as an error to the caller of Get, and is
// counted in elang_cache_failures_total and logged, so an operator is alerted
// while the application goes on from its own source of truth. Set, Delete and
// Clear report failures, since a caller may need to know that an entry was not
// written or removed.
//
// The store is services/elang/store: Redis, or, when the application has no
// REDIS_URL, a private local directory that serves one host only (entries
// written on one host are not seen on another).
package cache

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hanchat/luagen/services/elang/store"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrInvalid: a key, value or TTL the cache cannot take (store.ErrInvalid).
var ErrInvalid = store.ErrInvalid

// ErrUnavailable: the store could not serve a Set, Delete or Clear.
var ErrUnavailable = errors.New("cache: store unavailable")

// Options tune a Cache. The zero value is usable.
type Options struct {
	// Timeout bounds each store call (Clear: each batch); zero means 250ms. A
	// hung Redis then costs a Get this long and reads as a miss.
	Timeout time.Duration
	// ClearBatch is how many entry files one Clear step removes in the local
	// store, 1..10000; zero means 500. (In Redis a clear is one step.)
	ClearBatch int
	// Registerer receives the metrics; nil: counted but exported nowhere.
	Registerer prometheus.Registerer
	// Logger receives a warning per store failure (never a value); nil means slog.Default().
	Logger *slog.Logger
}

// Cache is the application cache of one deployment prefix. It is safe for
// concurrent use.
type Cache struct {
	st      *store.Store
	timeout time.Duration
	batch   int
	m       *store.Meter
}

// New returns the cache on st. Options out of range fall back to their defaults.
func New(st *store.Store, o Options) *Cache {
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	if o.ClearBatch < 1 || o.ClearBatch > 10000 {
		o.ClearBatch = 500
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Cache{st: st, timeout: o.Timeout, batch: o.ClearBatch, m: store.NewMeter(st, "cache", o.Registerer, o.Logger,
		"Cache operations by op (get, set, delete, clear) and result (hit, miss, ok, failure, invalid).",
		"Cache store failures by op; a get failure was answered as a miss. Alert on any increase.")}
}

// Local reports whether the cache lives in the local directory (one host only).
func (c *Cache) Local() bool { return c.st.Local() }

// Get reads the entry key (1..128 characters of [A-Za-z0-9._-]): its value and
// true, or nil and false when there is none, it expired, or the store failed.
// A store failure is never an error: it is counted in
// elang_cache_failures_total, logged, and read as a miss. The only error is
// ErrInvalid, for a key the cache cannot take (a bug of the caller, refused
// before any I/O).
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, ok, err := c.st.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrInvalid):
		c.m.Count("get", "invalid")
		return nil, false, err
	case err != nil:
		c.m.Failed("get", err)
		return nil, false, nil
	case !ok:
		c.m.Count("get", "miss")
		return nil, false, nil
	}
	c.m.Count("get", "hit")
	return v, true, nil
}

// Set stores value under key for ttl (1ms..30 days; every entry expires). An
// invalid key, value or TTL is ErrInvalid; a store failure is ErrUnavailable.
func (c *Cache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.result("set", c.st.Set(ctx, key, value, ttl))
}

// Delete removes the entry key and reports whether there was one.
func (c *Cache) Delete(ctx context.Context, key string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ok, err := c.st.Delete(ctx, key)
	return ok, c.result("delete", err)
}

func (c *Cache) result(op string, err error) error {
	if err == nil {
		c.m.Count(op, "ok")
	}
	return c.m.Err(op, err, ErrUnavailable)
}

// Clear makes every entry of this deployment prefix read as absent and returns
// how many it removed now. In Redis it removes none: it retires the prefix's
// cache generation in one script call (elang_cache_clear), so every entry
// written before reads as a miss at once and stays until its TTL (no SCAN,
// which would list every deployment's key names; never FLUSHDB), and it
// returns 0. In the local store it removes the entry files in batches of
// Options.ClearBatch and returns how many; entries written while it runs may
// survive it there. Keys of other prefixes, and this prefix's locks, sessions
// and rate limits, are left alone. It stops at the first failure, or when ctx
// ends.
func (c *Cache) Clear(ctx context.Context) (int, error) {
	total := 0
	var cursor uint64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		bctx, cancel := context.WithTimeout(ctx, c.timeout)
		next, n, err := c.st.ClearBatch(bctx, cursor, c.batch)
		cancel()
		total += n
		if err != nil {
			return total, c.result("clear", err)
		}
		if next == 0 {
			c.m.Count("clear", "ok")
			return total, nil
		}
		cursor = next
	}
}
