package degraded

import (
	"container/heap"
	"sync"
	"time"
)

// Limit is one limit of the local limiter: at most Units per Window for Key.
// Windows are fixed and open with their first request, as the Redis scripts'
// fixed windows do.
type Limit[K comparable] struct {
	// Key is who and what is counted (the caller's subject, route and window);
	// two limits with the same Key share one window.
	Key K
	// Units is the most the window allows, at least 1.
	Units int64
	// Window is the window's length.
	Window time.Duration
}

// Decision is a Limiter's answer for a list of limits.
type Decision struct {
	// Allowed reports whether every limit allowed the cost.
	Allowed bool
	// Index is the deciding limit in the list: the first that denies, or, when
	// all allow, the one with the fewest units remaining.
	Index int
	// Remaining is the units the deciding limit still has.
	Remaining int64
	// RetryAfter is 0 when allowed; else the time until the deciding window ends.
	RetryAfter time.Duration
	// ResetAt is when the deciding window ends.
	ResetAt time.Time
}

// Limiter is the LocalLimit fallback: fixed windows counted in this process
// only, in a table of at most maxEntries windows. A full table (after dropping
// the windows that are over) denies keys it does not hold yet: being
// conservative is the point while the shared limiter is down (seed 000 §10).
// It is safe for concurrent use.
//
// The windows are also kept in a min-heap by end, so making room pops exactly
// the windows that are over, each once: a flood of new keys against a full
// table of live windows costs one look at the heap's top per key, never a
// sweep of the table under the mutex.
type Limiter[K comparable] struct {
	mu      sync.Mutex
	max     int
	windows map[K]*window[K]
	byEnd   windowHeap[K]
	// examined counts the windows looked at to make room (tests bound it).
	examined int
}

type window[K comparable] struct {
	key   K
	end   time.Time // when the window is over
	count int64
	index int // in byEnd; -1 for a peek's window, which is never stored
}

// NewLimiter returns a Limiter whose table holds at most maxEntries windows
// (at least 1).
func NewLimiter[K comparable](maxEntries int) *Limiter[K] {
	return &Limiter[K]{max: max(maxEntries, 1), windows: map[K]*window[K]{}}
}

// Allow takes cost from every limit once all of them allow it, and otherwise
// takes nothing.
func (l *Limiter[K]) Allow(now time.Time, limits []Limit[K], cost int64) Decision {
	return l.eval(now, limits, cost, false)
}

// Peek evaluates cost against every limit without taking it and without
// storing a window.
func (l *Limiter[K]) Peek(now time.Time, limits []Limit[K], cost int64) Decision {
	return l.eval(now, limits, cost, true)
}

func (l *Limiter[K]) eval(now time.Time, limits []Limit[K], cost int64, peek bool) Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out Decision
	wins := make([]*window[K], len(limits))
	for i, lim := range limits {
		w := l.windows[lim.Key]
		switch {
		case w != nil && !now.Before(w.end) && peek:
			w = &window[K]{key: lim.Key, end: now.Add(lim.Window), index: -1} // the window is over
		case w != nil && !now.Before(w.end):
			w.end, w.count = now.Add(lim.Window), 0 // the window is over: a new one, in place
			heap.Fix(&l.byEnd, w.index)
		case w == nil:
			if len(l.windows) >= l.max {
				l.dropOver(now)
			}
			if len(l.windows) >= l.max {
				return Decision{Index: i, RetryAfter: lim.Window, ResetAt: now.Add(lim.Window)}
			}
			w = &window[K]{key: lim.Key, end: now.Add(lim.Window), index: -1}
			if !peek {
				l.windows[lim.Key] = w
				heap.Push(&l.byEnd, w)
			}
		}
		dec := Decision{Index: i, ResetAt: w.end}
		if w.count+cost > lim.Units {
			dec.Remaining = max(lim.Units-w.count, 0)
			dec.RetryAfter = w.end.Sub(now)
			return dec
		}
		dec.Allowed = true
		dec.Remaining = lim.Units - w.count - cost
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
func (l *Limiter[K]) dropOver(now time.Time) {
	for len(l.byEnd) > 0 {
		l.examined++
		w := l.byEnd[0]
		if now.Before(w.end) {
			return
		}
		heap.Pop(&l.byEnd)
		delete(l.windows, w.key)
	}
}

// windowHeap orders windows by end (container/heap).
type windowHeap[K comparable] []*window[K]

func (h windowHeap[K]) Len() int           { return len(h) }
func (h windowHeap[K]) Less(i, j int) bool { return h[i].end.Before(h[j].end) }
func (h windowHeap[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *windowHeap[K]) Push(x any) {
	w := x.(*window[K])
	w.index = len(*h)
	*h = append(*h, w)
}

func (h *windowHeap[K]) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}
