package ratelimit

import (
	"sync"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
)

// localLimiter is the LocalLimit fallback: fixed windows counted in this process
// only, in a table of at most max entries. A full table (after dropping expired
// windows) denies subjects it does not hold yet: being conservative is the point
// while the shared limiter is down (seed 000 §10).
type localLimiter struct {
	mu      sync.Mutex
	max     int
	divisor int64
	windows map[localKey]*localWindow
}

type localKey struct {
	route  vm1.APIRoute
	scope  Scope
	window time.Duration
	id     string // the subject part of the Redis key: a UUID, an HMAC or a service name
}

type localWindow struct {
	start time.Time
	count int64
}

func newLocalLimiter(max int, divisor int64) *localLimiter {
	return &localLimiter{max: max, divisor: divisor, windows: map[localKey]*localWindow{}}
}

// allow evaluates the limits in order and takes cost from each (unless peek)
// once all of them allow it.
func (ll *localLimiter) allow(now time.Time, route vm1.APIRoute, limits []Limit, ids []string, cost int64, peek bool) Decision {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	var out Decision
	wins := make([]*localWindow, len(limits))
	for i, lim := range limits {
		quota := max(lim.Limit/ll.divisor, 1)
		k := localKey{route: route, scope: lim.Scope, window: lim.Window, id: ids[i]}
		w := ll.windows[k]
		if w != nil && !now.Before(w.start.Add(lim.Window)) {
			w = nil // the window is over
		}
		if w == nil {
			if len(ll.windows) >= ll.max {
				ll.sweep(now)
			}
			if len(ll.windows) >= ll.max {
				return Decision{Scope: lim.Scope, Limit: quota, Window: lim.Window, RetryAfter: lim.Window, ResetAt: now.Add(lim.Window), ResetAfter: lim.Window}
			}
			w = &localWindow{start: now}
			if !peek {
				ll.windows[k] = w
			}
		}
		reset := w.start.Add(lim.Window)
		dec := Decision{Scope: lim.Scope, Limit: quota, Window: lim.Window, ResetAt: reset, ResetAfter: reset.Sub(now)}
		if w.count+cost > quota {
			dec.Remaining = max(quota-w.count, 0)
			dec.RetryAfter = reset.Sub(now)
			return dec
		}
		dec.Allowed = true
		dec.Remaining = quota - w.count - cost
		wins[i] = w
		if i == 0 || dec.Remaining < out.Remaining {
			out = dec
		}
	}
	if !peek {
		for _, w := range wins {
			w.count += cost
		}
	}
	return out
}

// sweep drops every window that is over; the caller holds mu.
func (ll *localLimiter) sweep(now time.Time) {
	for k, w := range ll.windows {
		if !now.Before(w.start.Add(k.window)) {
			delete(ll.windows, k)
		}
	}
}
