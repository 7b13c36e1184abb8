package promreg_test

import (
	"errors"
	"testing"

	"github.com/hanchat/luagen/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func counterVec() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promreg_test_total", Help: "A test counter."}, []string{"result"})
}

// Registering twice on one registry gets the first collector back, and both
// owners then count into it.
func TestRegisterTwiceReusesTheFirst(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, second := counterVec(), counterVec()
	if err := promreg.Register(reg, &first); err != nil {
		t.Fatal(err)
	}
	kept := second
	if err := promreg.Register(reg, &second); err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Fatal("the second registration did not get the registered collector")
	}
	first.WithLabelValues("ok").Inc()
	second.WithLabelValues("ok").Inc()
	if got := testutil.ToFloat64(first.WithLabelValues("ok")); got != 2 {
		t.Errorf("the two owners counted %v, want 2", got)
	}
	if n, err := testutil.GatherAndCount(reg, "promreg_test_total"); err != nil || n != 1 {
		t.Errorf("%d series gathered (%v), want 1", n, err)
	}
	if got := testutil.ToFloat64(kept.WithLabelValues("ok")); got != 0 {
		t.Errorf("the refused collector counted %v", got)
	}
}

// A plain Counter and a Gauge are reused the same way.
func TestRegisterReusesEveryCollectorType(t *testing.T) {
	reg := prometheus.NewRegistry()
	c1 := prometheus.NewCounter(prometheus.CounterOpts{Name: "promreg_plain_total", Help: "h"})
	c2 := prometheus.NewCounter(prometheus.CounterOpts{Name: "promreg_plain_total", Help: "h"})
	g1 := prometheus.NewGauge(prometheus.GaugeOpts{Name: "promreg_gauge", Help: "h"})
	g2 := prometheus.NewGauge(prometheus.GaugeOpts{Name: "promreg_gauge", Help: "h"})
	for _, err := range []error{promreg.Register(reg, &c1), promreg.Register(reg, &c2), promreg.Register(reg, &g1), promreg.Register(reg, &g2)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if c1 != c2 || g1 != g2 {
		t.Error("a second registration kept its own collector")
	}
}

// A collector of other labels under a registered name is an error, never a
// panic, and the caller's collector stays its own.
func TestRegisterConflictIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := counterVec()
	if err := promreg.Register(reg, &first); err != nil {
		t.Fatal(err)
	}
	other := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promreg_test_total", Help: "A test counter."}, []string{"outcome"})
	mine := other
	err := promreg.Register(reg, &other)
	if err == nil {
		t.Fatal("a collector of other labels under a registered name: accepted")
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		t.Errorf("a conflict reported as a reuse: %v", err)
	}
	if other != mine {
		t.Error("the refused collector was replaced")
	}
}

// The same description under another Go type (a Counter where a CounterVec
// without labels is registered) cannot be reused: an error, not a panic.
func TestRegisterOtherTypeIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promreg_vec_total", Help: "h"}, nil)
	if err := promreg.Register(reg, &vec); err != nil {
		t.Fatal(err)
	}
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "promreg_vec_total", Help: "h"})
	if err := promreg.Register(reg, &counter); err == nil {
		t.Fatal("a Counter where a CounterVec of the same description is registered: accepted")
	}
}

func TestRegisterOnNilRegistersNothing(t *testing.T) {
	c := counterVec()
	mine := c
	if err := promreg.Register(nil, &c); err != nil || c != mine {
		t.Errorf("nil registerer: %v, collector replaced %v", err, c != mine)
	}
}
