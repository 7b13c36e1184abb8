package ratelimit

import (
	"container/heap"
	"sync"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
)

// localLimiter is the LocalLimit fallback: fixed windows counted in this process
// only, in a table of at most max entries. A full table (after dropping the
// windows that are over) denies subjects it does not hold yet: being
// conservative is the point while the shared limiter is down (seed 000 §10).
//
// The windows are also kept in a min-heap by end, so making room pops exactly
// the windows that are over, each once: a flood of new subjects against a full
// table of live windows costs one look at the heap's top per subject, never a
// sweep of the table under the mutex.
type localLimiter struct {
	mu      sync.Mutex
	max     int
	divisor int64
	windows map[localKey]*localWindow
	byEnd   windowHeap
	// examined counts the windows looked at to make room (tests bound it).
	examined int
}

type localKey struct {
	route  vm1.APIRoute
	scope  Scope
	window time.Duration
	id     string // the subject part of the Redis key: a UUID, an HMAC or a service name
}

type localWindow struct {
	key   localKey
	start time.Time
	end   time.Time // start + the limit's window: over once now reaches it
	count int64
	index int // in byEnd; -1 for a peek's window, which is never stored
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
		switch {
		case w != nil && !now.Before(w.end) && peek:
			w = &localWindow{key: k, start: now, end: now.Add(lim.Window), index: -1} // the window is over
		case w != nil && !now.Before(w.end):
			w.start, w.end, w.count = now, now.Add(lim.Window), 0 // the window is over: a new one, in place
			heap.Fix(&ll.byEnd, w.index)
		case w == nil:
			if len(ll.windows) >= ll.max {
				ll.dropOver(now)
			}
			if len(ll.windows) >= ll.max {
				return Decision{Scope: lim.Scope, Limit: quota, Window: lim.Window, RetryAfter: lim.Window, ResetAt: now.Add(lim.Window), ResetAfter: lim.Window}
			}
			w = &localWindow{key: k, start: now, end: now.Add(lim.Window), index: -1}
			if !peek {
				ll.windows[k] = w
				heap.Push(&ll.byEnd, w)
			}
		}
		dec := Decision{Scope: lim.Scope, Limit: quota, Window: lim.Window, ResetAt: w.end, ResetAfter: w.end.Sub(now)}
		if w.count+cost > quota {
			dec.Remaining = max(quota-w.count, 0)
			dec.RetryAfter = w.end.Sub(now)
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

// dropOver drops the windows that are over, earliest end first, and stops at
// the first that is not; the caller holds mu.
func (ll *localLimiter) dropOver(now time.Time) {
	for len(ll.byEnd) > 0 {
		ll.examined++
		w := ll.byEnd[0]
		if now.Before(w.end) {
			return
		}
		heap.Pop(&ll.byEnd)
		delete(ll.windows, w.key)
	}
}

// windowHeap orders windows by end (container/heap).
type windowHeap []*localWindow

func (h windowHeap) Len() int           { return len(h) }
func (h windowHeap) Less(i, j int) bool { return h[i].end.Before(h[j].end) }
func (h windowHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *windowHeap) Push(x any) {
	w := x.(*localWindow)
	w.index = len(*h)
	*h = append(*h, w)
}

func (h *windowHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}
