package promreg_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/hanchat/luagen/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Two Sets on one registry (two instances of a component) get the same
// collectors: one series, counting both.
func TestTwiceOnOneRegistryGetsTheSameCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := promreg.On(reg), promreg.On(reg)
	first := a.CounterVec("promreg_test_total", "A test counter.", "result")
	second := b.CounterVec("promreg_test_total", "A test counter.", "result")
	if a.Err() != nil || b.Err() != nil {
		t.Fatal(a.Err(), b.Err())
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
	c1, c2 := a.Counter("promreg_plain_total", "h"), b.Counter("promreg_plain_total", "h")
	g1, g2 := a.Gauge("promreg_gauge", "h"), b.Gauge("promreg_gauge", "h")
	h1, h2 := a.HistogramVec("promreg_seconds", "h", []float64{1, 2}, "op"), b.HistogramVec("promreg_seconds", "h", []float64{1, 2}, "op")
	if c1 != c2 || g1 != g2 || h1 != h2 || a.Err() != nil || b.Err() != nil {
		t.Error("a second registration kept its own collector")
	}
}

// A collector of other labels under a registered name is the Set's error,
// never a panic; the refused collector is returned unregistered, and the
// first refusal stays.
func TestConflictIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	promreg.On(reg).CounterVec("promreg_test_total", "A test counter.", "result")
	s := promreg.On(reg)
	other := s.CounterVec("promreg_test_total", "A test counter.", "outcome")
	err := s.Err()
	if err == nil {
		t.Fatal("a collector of other labels under a registered name: accepted")
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		t.Errorf("a conflict reported as a reuse: %v", err)
	}
	other.WithLabelValues("x").Inc() // counts, exported nowhere
	s.Counter("promreg_test_total", "another help")
	if s.Err() != err {
		t.Errorf("the first refusal was replaced: %v", s.Err())
	}
}

// The same description under another Go type (a Counter where a CounterVec
// without labels is registered) cannot be reused: an error, not a panic.
func TestOtherTypeIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	promreg.On(reg).CounterVec("promreg_vec_total", "h")
	s := promreg.On(reg)
	s.Counter("promreg_vec_total", "h")
	if s.Err() == nil {
		t.Fatal("a Counter where a CounterVec of the same description is registered: accepted")
	}
}

// A custom collector goes through Add.
func TestAddACustomCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	desc := prometheus.NewDesc("promreg_custom", "h", nil, nil)
	first := promreg.Add(promreg.On(reg), &constCollector{desc: desc, v: 3})
	second := promreg.Add(promreg.On(reg), &constCollector{desc: desc, v: 4})
	if second != first {
		t.Fatal("the second custom collector was not the first")
	}
	if n, err := testutil.GatherAndCount(reg, "promreg_custom"); err != nil || n != 1 {
		t.Errorf("%d series (%v), want 1", n, err)
	}
}

func TestNilRegistersNothing(t *testing.T) {
	s := promreg.On(nil)
	c := s.CounterVec("promreg_test_total", "h", "result")
	c.WithLabelValues("ok").Inc()
	if s.Err() != nil || testutil.ToFloat64(c.WithLabelValues("ok")) != 1 {
		t.Errorf("nil registerer: %v", s.Err())
	}
}

type constCollector struct {
	desc *prometheus.Desc
	v    float64
}

func (c *constCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *constCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, c.v)
}

// LogErr logs a refusal once, naming the component, and nothing when every
// collector was registered or reused.
func TestLogErrLogsOnlyARefusal(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	reg := prometheus.NewRegistry()
	ok := promreg.On(reg)
	ok.CounterVec("promreg_log_total", "A test counter.", "result")
	ok.LogErr(log, "first:")
	if buf.Len() != 0 {
		t.Fatalf("a registration without refusal logged %q", buf.String())
	}
	refused := promreg.On(reg)
	refused.CounterVec("promreg_log_total", "A test counter.", "outcome")
	refused.LogErr(log, "second:")
	got := buf.String()
	if !strings.Contains(got, "level=ERROR") || !strings.Contains(got, `msg="second: metrics not registered: they are counted but exported nowhere"`) || strings.Count(got, "\n") != 1 {
		t.Errorf("a refusal logged %q, want one error line naming second:", got)
	}
}
