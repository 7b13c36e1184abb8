package promtest_test

import (
	"testing"

	"github.com/hanchat/luagen/internal/promtest"
	"github.com/prometheus/client_golang/prometheus"
)

func TestValueSumAndLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "h"}, []string{"a", "b"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})
	reg.MustRegister(c, g)
	c.WithLabelValues("x", "1").Add(2)
	c.WithLabelValues("x", "2").Add(3)
	c.WithLabelValues("y", "1").Add(5)
	g.Set(7)
	if v := promtest.Value(t, reg, "c_total", map[string]string{"a": "x", "b": "2"}); v != 3 {
		t.Errorf("Value = %v, want 3", v)
	}
	if v := promtest.Value(t, reg, "c_total", map[string]string{"a": "x"}); v != 0 {
		t.Errorf("Value with a partial label set = %v, want 0 (no such series)", v)
	}
	if v := promtest.Value(t, reg, "g", nil); v != 7 {
		t.Errorf("gauge = %v, want 7", v)
	}
	if v := promtest.Sum(t, reg, "c_total", map[string]string{"a": "x"}); v != 5 {
		t.Errorf("Sum = %v, want 5", v)
	}
	if v := promtest.Sum(t, reg, "c_total", nil); v != 10 {
		t.Errorf("Sum of all = %v, want 10", v)
	}
	n := 0
	promtest.Labels(t, reg, func(metric, label, value string) { n++ })
	if n != 6 {
		t.Errorf("%d labels, want 6", n)
	}
}
