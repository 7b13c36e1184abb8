// Package scriptmetrics exports per-script metrics of luagen's generated
// wrappers to Prometheus: a runtime.Observer to put in a generated Clients'
// Observer field. Without one (the default) the wrappers measure nothing.
//
//	m, err := scriptmetrics.New(reg, app.AllScripts()...)
//	scripts, err := app.NewScripts(app.Clients{DB0: rdb, Observer: m})
//
// Metrics (label script is the spec's script name; code is bounded):
//
//	luagen_script_calls_total{script}             calls sent
//	luagen_script_errors_total{script,code}       calls that failed, by code: the error
//	                                              reply's first word (a declared code such
//	                                              as NOT_OWNER, or Redis's own: NOPERM, ERR,
//	                                              BUSY...), outcome_unknown, not_sent, other
//	luagen_script_noscript_reloads_total{script}  SCRIPT LOADs after NOSCRIPT (callers that
//	                                              shared one load count once)
//	luagen_script_duration_seconds{script}        latency histogram of calls sent
//
// Keys, arguments and replies never become labels.
package scriptmetrics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/runtime"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is a runtime.Observer that counts and times every call of the
// scripts it was made for. It is safe for concurrent use.
type Metrics struct {
	calls    *prometheus.CounterVec
	errs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// per holds each script's series, resolved once, so observing a call
	// looks up no labels.
	per map[*runtime.Script]*series
}

type series struct {
	calls    prometheus.Counter
	duration prometheus.Observer
}

// Buckets are the latency histogram's upper bounds in seconds: 50 µs to 1 s.
var Buckets = []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1}

// New registers the metrics of scripts on reg. Calls of other scripts are
// measured too, under their names, at the cost of a label lookup each. Metrics
// made on one reg share its collectors and count together (two generated
// packages of one process, each with its own Metrics), and the reloads of
// every one's scripts are exported.
func New(reg prometheus.Registerer, scripts ...*runtime.Script) (*Metrics, error) {
	set := promreg.On(reg)
	m := &Metrics{
		calls:    set.CounterVec("luagen_script_calls_total", "Script calls the generated wrappers sent.", "script"),
		errs:     set.CounterVec("luagen_script_errors_total", "Script calls that failed, by the error reply's code (or outcome_unknown, not_sent, other).", "script", "code"),
		duration: set.HistogramVec("luagen_script_duration_seconds", "Latency of script calls the generated wrappers sent.", Buckets, "script"),
		per:      map[*runtime.Script]*series{},
	}
	reloads := promreg.Add(set, &reloadCollector{desc: prometheus.NewDesc("luagen_script_noscript_reloads_total", "SCRIPT LOADs after a call met NOSCRIPT (callers that shared one load count once).", []string{"script"}, nil)})
	if err := set.Err(); err != nil {
		return nil, fmt.Errorf("scriptmetrics: %w", err)
	}
	reloads.add(scripts)
	for _, s := range scripts {
		m.per[s] = &series{calls: m.calls.WithLabelValues(s.Name()), duration: m.duration.WithLabelValues(s.Name())}
	}
	return m, nil
}

// ObserveCall counts a call, its latency and its error's code.
func (m *Metrics) ObserveCall(s *runtime.Script, took time.Duration, err error) {
	if se, ok := m.per[s]; ok {
		se.calls.Inc()
		se.duration.Observe(took.Seconds())
	} else {
		m.calls.WithLabelValues(s.Name()).Inc()
		m.duration.WithLabelValues(s.Name()).Observe(took.Seconds())
	}
	if err != nil {
		m.errs.WithLabelValues(s.Name(), Code(err)).Inc()
	}
}

// Code is the label of an error: an error reply's first word when it is a
// plain code (A-Z, 0-9, _; at most 32 characters), else outcome_unknown,
// not_sent (the context ended before the call was sent) or other.
func Code(err error) string {
	var se *runtime.ScriptError
	switch {
	case errors.As(err, &se) && plainCode(se.Code):
		return se.Code
	case errors.Is(err, runtime.ErrOutcomeUnknown):
		return "outcome_unknown"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "not_sent"
	}
	return "other"
}

func plainCode(c string) bool {
	if c == "" || len(c) > 32 {
		return false
	}
	for i := 0; i < len(c); i++ {
		if !(c[i] >= 'A' && c[i] <= 'Z' || c[i] >= '0' && c[i] <= '9' || c[i] == '_') {
			return false
		}
	}
	return true
}

// reloadCollector reads each script's NOSCRIPT reload count when scraped: the
// scripts of every Metrics made on its registry.
type reloadCollector struct {
	desc    *prometheus.Desc
	mu      sync.Mutex
	scripts []*runtime.Script
	has     map[*runtime.Script]bool
}

// add adds the scripts not collected yet.
func (r *reloadCollector) add(scripts []*runtime.Script) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.has == nil {
		r.has = map[*runtime.Script]bool{}
	}
	for _, s := range scripts {
		if !r.has[s] {
			r.has[s] = true
			r.scripts = append(r.scripts, s)
		}
	}
}

func (r *reloadCollector) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc }

func (r *reloadCollector) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	scripts := r.scripts
	r.mu.Unlock()
	for _, s := range scripts {
		ch <- prometheus.MustNewConstMetric(r.desc, prometheus.CounterValue, float64(s.Reloads()), s.Name())
	}
}
