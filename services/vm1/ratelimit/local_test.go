package ratelimit

import (
	"strconv"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
)

// A flood of new subjects against a full table of live windows is denied
// without sweeping the table: each one looks at one window (the earliest end),
// where a sweep under the mutex looked at all 10000 every time.
func TestLocalLimiterFloodOfNewSubjectsStaysBounded(t *testing.T) {
	const size = 10000
	ll := newLocalLimiter(size, 1)
	limits := []Limit{{Scope: ScopeIP, Limit: 10, Window: time.Minute}}
	for i := 0; i < size; i++ {
		if d := ll.allow(t0.Add(time.Duration(i)*time.Millisecond), vm1.APIRoutePublicGet, limits, []string{"live-" + strconv.Itoa(i)}, 1, false); !d.Allowed {
			t.Fatalf("subject %d: %+v", i, d)
		}
	}
	ll.examined = 0
	now := t0.Add(30 * time.Second)
	for i := 0; i < size; i++ {
		if d := ll.allow(now, vm1.APIRoutePublicGet, limits, []string{"new-" + strconv.Itoa(i)}, 1, false); d.Allowed {
			t.Fatalf("a new subject in a full table: %+v", d)
		}
	}
	if ll.examined > size {
		t.Fatalf("%d new subjects examined %d windows: want at most one each", size, ll.examined)
	}
	// Windows that are over make room exactly as they end, oldest first.
	ll.examined = 0
	later := t0.Add(time.Minute + 99*time.Millisecond) // the first 100 windows (ends t0+1m .. t0+1m+99ms) are over
	for i := 0; i < 100; i++ {
		if d := ll.allow(later, vm1.APIRoutePublicGet, limits, []string{"late-" + strconv.Itoa(i)}, 1, false); !d.Allowed {
			t.Fatalf("late subject %d after 100 windows ended: %+v", i, d)
		}
	}
	if d := ll.allow(later, vm1.APIRoutePublicGet, limits, []string{"one-too-many"}, 1, false); d.Allowed {
		t.Fatalf("a 101st late subject: %+v", d)
	}
	if ll.examined > 102 {
		t.Fatalf("making room for 100 examined %d windows", ll.examined)
	}
	if len(ll.windows) != size || len(ll.byEnd) != size {
		t.Fatalf("table %d, heap %d: want both %d", len(ll.windows), len(ll.byEnd), size)
	}
	// A subject whose window ended gets a new one in place, also in a full table.
	if d := ll.allow(t0.Add(time.Minute+150*time.Millisecond), vm1.APIRoutePublicGet, limits, []string{"live-150"}, 1, false); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("a known subject whose window ended: %+v", d)
	}
}

// BenchmarkLocalLimiterFullTable is one new subject denied by a full table of
// 10000 live windows (the flood the LocalLimit fallback meets).
func BenchmarkLocalLimiterFullTable(b *testing.B) {
	ll := newLocalLimiter(10000, 1)
	limits := []Limit{{Scope: ScopeIP, Limit: 10, Window: time.Minute}}
	for i := 0; i < 10000; i++ {
		ll.allow(t0, vm1.APIRoutePublicGet, limits, []string{"live-" + strconv.Itoa(i)}, 1, false)
	}
	ids := make([][]string, 1024)
	for i := range ids {
		ids[i] = []string{"new-" + strconv.Itoa(i)}
	}
	now := t0.Add(time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ll.allow(now, vm1.APIRoutePublicGet, limits, ids[i%len(ids)], 1, false)
	}
}
