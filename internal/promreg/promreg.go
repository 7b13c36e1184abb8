// Package promreg makes and registers Prometheus collectors the one way every
// package of this module does: a collector already registered under the same
// description (another instance of the same component in one process) is
// reused, so the instances count together, and nothing panics.
//
//	s := promreg.On(reg)
//	m := metrics{
//		calls: s.CounterVec("app_calls_total", "Calls by result.", "result"),
//		up:    s.Gauge("app_up", "1 while the app serves."),
//	}
//	if err := s.Err(); err != nil { ... }
package promreg

import (
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Set makes collectors and registers each on one Registerer. It keeps the
// first refusal (Err): a collector of another type, or of other labels or
// help, under one of the names. A refused collector is still returned, and
// counts, but is exported nowhere.
type Set struct {
	reg prometheus.Registerer
	err error
}

// On starts a Set on reg. A nil reg registers nothing.
func On(reg prometheus.Registerer) *Set { return &Set{reg: reg} }

// Err is the first refusal, or nil.
func (s *Set) Err() error { return s.err }

// LogErr logs the first refusal, if any, as an error of component on log: the
// collectors count but are exported nowhere. For a component whose constructor
// has no error to return.
func (s *Set) LogErr(log *slog.Logger, component string) {
	if s.err != nil {
		log.Error(component+" metrics not registered: they are counted but exported nowhere", "err", s.err)
	}
}

// Add registers c and returns it, or the equal collector of c's type the
// Registerer holds already (prometheus.AlreadyRegisteredError).
func Add[C prometheus.Collector](s *Set, c C) C {
	if s.reg == nil {
		return c
	}
	err := s.reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	if s.err == nil {
		s.err = err
	}
	return c
}

// Counter is a counter without labels.
func (s *Set) Counter(name, help string) prometheus.Counter {
	return Add(s, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

// CounterVec is a counter with the given labels.
func (s *Set) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return Add(s, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
}

// Gauge is a gauge without labels.
func (s *Set) Gauge(name, help string) prometheus.Gauge {
	return Add(s, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}))
}

// HistogramVec is a histogram with the given buckets and labels.
func (s *Set) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return Add(s, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels))
}
