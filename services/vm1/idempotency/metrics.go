package idempotency

import (
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
)

// Results an outcome is counted under.
const (
	resultExecuted    = "executed"    // the call ran and its outcome was recorded
	resultHit         = "hit"         // a retry answered from Redis
	resultFallback    = "fallback"    // a retry answered from PostgreSQL
	resultConflict    = "conflict"    // the key was used with another fingerprint
	resultInProgress  = "in_progress" // another request holds the key
	resultUnavailable = "unavailable" // failed closed: Redis or PostgreSQL could not answer
	resultTransient   = "transient"   // a 503/504, not recorded
	resultFailed      = "failed"      // the call returned an error, not recorded
	resultLeaseLost   = "lease_lost"  // the claim was taken over; rolled back
)

// metrics count idempotency outcomes (seed 000 §11: hit, conflict, fallback)
// by scope (enum idem_scope) and result, and Redis failures the flow absorbed by
// operation. No label holds a user, a key or a value.
type metrics struct {
	outcomes    *prometheus.CounterVec
	redisErrors *prometheus.CounterVec
}

// newMetrics registers han_api_idempotency_total and
// han_api_idempotency_redis_errors_total on reg (nil: nowhere).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	set := promreg.On(reg)
	m := &metrics{
		outcomes:    set.CounterVec("han_api_idempotency_total", "Idempotent calls of api-backend by scope and result (executed, hit, fallback, conflict, in_progress, unavailable, transient, failed, lease_lost).", "scope", "result"),
		redisErrors: set.CounterVec("han_api_idempotency_redis_errors_total", "Redis failures the idempotency flow absorbed because PostgreSQL holds the truth, by operation.", "op"),
	}
	return m, set.Err()
}

func (m *metrics) outcome(scope vm1.IdemScope, result string) {
	m.outcomes.WithLabelValues(string(scope), result).Inc()
}

func (m *metrics) redisError(op string) {
	m.redisErrors.WithLabelValues(op).Inc()
}
