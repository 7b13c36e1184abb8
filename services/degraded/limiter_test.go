package degraded

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func one(key string, units int64, window time.Duration) []Limit[string] {
	return []Limit[string]{{Key: key, Units: units, Window: window}}
}

// A window counts exactly, opens with its first request and reopens once it
// is over; a denial says when.
func TestLimiterWindowCountsExactly(t *testing.T) {
	l := NewLimiter[string](10)
	lim := one("caller", 5, time.Minute)
	for i := 0; i < 5; i++ {
		if d := l.Allow(t0, lim, 1); !d.Allowed || d.Remaining != int64(4-i) || !d.ResetAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	now := t0.Add(20 * time.Second)
	if d := l.Allow(now, lim, 1); d.Allowed || d.Remaining != 0 || d.RetryAfter != 40*time.Second || !d.ResetAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("sixth: %+v", d)
	}
	if d := l.Allow(t0.Add(time.Minute), lim, 5); !d.Allowed || d.Remaining != 0 || !d.ResetAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("next window: %+v", d)
	}
}

// Several limits: a request is charged only when all allow it; the deciding
// limit is the first that denies, else the one with the fewest units left.
func TestLimiterChargesAllLimitsOrNone(t *testing.T) {
	l := NewLimiter[string](10)
	lims := []Limit[string]{{Key: "user", Units: 10, Window: time.Minute}, {Key: "ip", Units: 3, Window: time.Hour}}
	for i := 0; i < 3; i++ {
		if d := l.Allow(t0, lims, 1); !d.Allowed || d.Index != 1 || d.Remaining != int64(2-i) {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	if d := l.Allow(t0, lims, 1); d.Allowed || d.Index != 1 || d.RetryAfter != time.Hour {
		t.Fatalf("fourth: %+v", d)
	}
	// The denied request took nothing from the first limit: 7 units are left.
	if d := l.Peek(t0, lims[:1], 7); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("user limit after a denial: %+v", d)
	}
	if d := l.Peek(t0, lims[:1], 8); d.Allowed {
		t.Fatalf("user limit charged by a denied request: %+v", d)
	}
}

// Peek never stores: not a new window, not a reopened one.
func TestLimiterPeekStoresNothing(t *testing.T) {
	l := NewLimiter[string](1)
	if d := l.Peek(t0, one("a", 2, time.Second), 2); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("peek: %+v", d)
	}
	if len(l.windows) != 0 {
		t.Fatal("a peek stored a window")
	}
	l.Allow(t0, one("a", 2, time.Second), 2)
	if d := l.Peek(t0.Add(time.Second), one("a", 2, time.Second), 1); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("peek at a window that is over: %+v", d)
	}
	if d := l.Allow(t0.Add(500*time.Millisecond), one("a", 2, time.Second), 1); d.Allowed {
		t.Fatalf("the peek reopened the window: %+v", d)
	}
}

// Concurrent callers of one key get exactly Units allowed between them.
func TestLimiterConcurrentCallersAreExact(t *testing.T) {
	l := NewLimiter[string](100)
	lim := one("caller", 500, time.Hour)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				if l.Allow(t0, lim, 1).Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := allowed.Load(); got != 500 {
		t.Fatalf("%d allowed of 2000 requests, want exactly 500", got)
	}
}

// A flood of new keys against a full table of live windows is denied without
// sweeping the table: each one looks at one window (the earliest end), where a
// sweep under the mutex would look at all 10000 every time.
func TestLimiterFloodOfNewKeysStaysBounded(t *testing.T) {
	const size = 10000
	l := NewLimiter[string](size)
	for i := 0; i < size; i++ {
		if d := l.Allow(t0.Add(time.Duration(i)*time.Millisecond), one("live-"+strconv.Itoa(i), 10, time.Minute), 1); !d.Allowed {
			t.Fatalf("key %d: %+v", i, d)
		}
	}
	l.examined = 0
	now := t0.Add(30 * time.Second)
	for i := 0; i < size; i++ {
		if d := l.Allow(now, one("new-"+strconv.Itoa(i), 10, time.Minute), 1); d.Allowed || d.RetryAfter != time.Minute {
			t.Fatalf("a new key in a full table: %+v", d)
		}
	}
	if l.examined > size {
		t.Fatalf("%d new keys examined %d windows: want at most one each", size, l.examined)
	}
	// Windows that are over make room exactly as they end, oldest first.
	l.examined = 0
	later := t0.Add(time.Minute + 99*time.Millisecond) // the first 100 windows (ends t0+1m .. t0+1m+99ms) are over
	for i := 0; i < 100; i++ {
		if d := l.Allow(later, one("late-"+strconv.Itoa(i), 10, time.Minute), 1); !d.Allowed {
			t.Fatalf("late key %d after 100 windows ended: %+v", i, d)
		}
	}
	if d := l.Allow(later, one("one-too-many", 10, time.Minute), 1); d.Allowed {
		t.Fatalf("a 101st late key: %+v", d)
	}
	if l.examined > 102 {
		t.Fatalf("making room for 100 examined %d windows", l.examined)
	}
	if len(l.windows) != size || len(l.byEnd) != size {
		t.Fatalf("table %d, heap %d: want both %d", len(l.windows), len(l.byEnd), size)
	}
	// A key whose window ended gets a new one in place, also in a full table.
	if d := l.Allow(t0.Add(time.Minute+150*time.Millisecond), one("live-150", 10, time.Minute), 1); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("a known key whose window ended: %+v", d)
	}
}

// BenchmarkLimiterFullTable is one new key denied by a full table of 10000
// live windows (the flood the LocalLimit fallback meets).
func BenchmarkLimiterFullTable(b *testing.B) {
	l := NewLimiter[string](10000)
	for i := 0; i < 10000; i++ {
		l.Allow(t0, one("live-"+strconv.Itoa(i), 10, time.Minute), 1)
	}
	lims := make([][]Limit[string], 1024)
	for i := range lims {
		lims[i] = one("new-"+strconv.Itoa(i), 10, time.Minute)
	}
	now := t0.Add(time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.Allow(now, lims[i%len(lims)], 1)
	}
}
