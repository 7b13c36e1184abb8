package scriptmetrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/scriptmetrics"
	"github.com/prometheus/client_golang/prometheus"
)

func histogramCount(t *testing.T, g prometheus.Gatherer, name, script string) uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "script" && l.GetValue() == script {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// The generated wrappers with an Observer: calls, errors by declared code,
// NOSCRIPT reloads and the latency histogram, per script.
func TestMetricsOfGeneratedWrappers(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(vm1.DB0)
	if err := runtime.Preload(ctx, c, vm1.AllScripts()...); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := scriptmetrics.New(reg, vm1.AllScripts()...)
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: c, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	unobserved, err := vm1.NewScripts(vm1.Clients{DB0: c})
	if err != nil {
		t.Fatal(err)
	}
	key, err := vm1.NewAPIRLDialogKey("0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", 60)
	if err != nil {
		t.Fatal(err)
	}
	fixed := vm1.RateLimitFixedArgs{Limit: 100, Window: time.Minute, Cost: 1}
	for i := 0; i < 5; i++ {
		if _, err := scripts.RateLimitFixed(ctx, key, fixed); err != nil {
			t.Fatal(err)
		}
	}
	// Without an Observer nothing is measured.
	if _, err := unobserved.RateLimitFixed(ctx, key, fixed); err != nil {
		t.Fatal(err)
	}
	// A declared error reply: cost above limit is BAD_ARG from the script.
	bad := vm1.RateLimitSlidingArgs{Limit: 1, Window: time.Minute, Cost: 2, Nonce: "nonce-0000000000000001"}
	for i := 0; i < 2; i++ {
		if _, err := scripts.RateLimitSliding(ctx, key, bad); !errors.Is(err, vm1.ErrBadArg) {
			t.Fatalf("cost above limit: %v, want ErrBadArg", err)
		}
	}
	// A refused input is not sent, so not a call.
	if _, err := scripts.RateLimitFixed(ctx, key, vm1.RateLimitFixedArgs{}); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Fatalf("refused input: %v", err)
	}
	// An ended context: not sent, counted as a call that failed with not_sent.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := scripts.RateLimitFixed(cancelled, key, fixed); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// NOSCRIPT: flushed twice, two reloads (one per flush).
	for i := 0; i < 2; i++ {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := scripts.RateLimitFixed(ctx, key, fixed); err != nil {
			t.Fatal(err)
		}
	}
	want := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"luagen_script_calls_total", map[string]string{"script": "rate_limit_fixed"}, 8},
		{"luagen_script_calls_total", map[string]string{"script": "rate_limit_sliding"}, 2},
		{"luagen_script_errors_total", map[string]string{"script": "rate_limit_sliding", "code": "BAD_ARG"}, 2},
		{"luagen_script_errors_total", map[string]string{"script": "rate_limit_fixed", "code": "not_sent"}, 1},
		{"luagen_script_noscript_reloads_total", map[string]string{"script": "rate_limit_fixed"}, 2},
		{"luagen_script_noscript_reloads_total", map[string]string{"script": "rate_limit_sliding"}, 0},
	}
	for _, w := range want {
		if got := promtest.Value(t, reg, w.name, w.labels); got != w.value {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.value)
		}
	}
	if n := histogramCount(t, reg, "luagen_script_duration_seconds", "rate_limit_fixed"); n != 8 {
		t.Errorf("latency histogram of rate_limit_fixed holds %d calls, want 8", n)
	}
	promtest.Labels(t, reg, func(metric, label, value string) {
		if label == "code" && value != "BAD_ARG" && value != "not_sent" {
			t.Errorf("%s: unexpected code %q", metric, value)
		}
	})
}

// BenchmarkObserveCall is what an Observer adds to one call: count it and put
// its latency in the histogram (compare with a call's own ns/op, tens of µs in
// bench/ BenchmarkMetricsOverhead), from 1 goroutine and from all.
//
//	go test ./runtime/scriptmetrics -run '^$' -bench ObserveCall -benchmem -count 5
func BenchmarkObserveCall(b *testing.B) {
	m, err := scriptmetrics.New(prometheus.NewRegistry(), vm1.AllScripts()...)
	if err != nil {
		b.Fatal(err)
	}
	s := vm1.RateLimitFixedScript
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.ObserveCall(s, 42*time.Microsecond, nil)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.ObserveCall(s, 42*time.Microsecond, nil)
			}
		})
	})
}
