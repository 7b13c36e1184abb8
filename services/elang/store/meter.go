package store

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/hanchat/luagen/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
)

// Meter counts the operations an API on top of a Store (the cache, the locks)
// makes: elang_<api>_operations_total by store kind, op and result, and
// elang_<api>_failures_total by store kind and op, with a warning logged per
// failure (never a name or a value). Both APIs count and report store failures
// the same way through it.
type Meter struct {
	st       *Store
	api      string
	log      *slog.Logger
	ops      *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// NewMeter registers the counters of api ("cache", "lock") on reg (nil: counted
// but exported nowhere), with the help texts of the two metrics. A refused
// registration is logged on log, which must not be nil.
func NewMeter(st *Store, api string, reg prometheus.Registerer, log *slog.Logger, opsHelp, failuresHelp string) *Meter {
	set := promreg.On(reg)
	m := &Meter{
		st: st, api: api, log: log,
		ops:      set.CounterVec("elang_"+api+"_operations_total", opsHelp, "store", "op", "result"),
		failures: set.CounterVec("elang_"+api+"_failures_total", failuresHelp, "store", "op"),
	}
	set.LogErr(log, api+":")
	return m
}

// Count counts op with result.
func (m *Meter) Count(op, result string) { m.ops.WithLabelValues(m.st.Kind(), op, result).Inc() }

// Failed counts a store failure of op (result "failure", and one failure) and
// logs it.
func (m *Meter) Failed(op string, err error) {
	m.failures.WithLabelValues(m.st.Kind(), op).Inc()
	m.Count(op, "failure")
	m.log.Warn("elang "+m.api+": store failure", "store", m.st.Kind(), "op", op, "prefix", m.st.Prefix().String(), "err", err)
}

// Err is the caller's error for the store's answer err to op: nil as it is
// (counted by the caller, who knows the result), ErrInvalid as it is (counted
// "invalid"), anything else a failure (Failed) wrapped with unavailable, the
// API's sentinel.
func (m *Meter) Err(op string, err, unavailable error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalid):
		m.Count(op, "invalid")
		return err
	}
	m.Failed(op, err)
	return fmt.Errorf("%s %s: %w: %w", m.api, op, unavailable, err)
}
