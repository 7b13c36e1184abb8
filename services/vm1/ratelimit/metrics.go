package ratelimit

import (
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
)

// Results a decision is counted under.
const (
	resultAllowed         = "allowed"
	resultDenied          = "denied"
	resultUnavailable     = "unavailable"
	resultDegradedAllowed = "degraded_allowed"
	resultDegradedDenied  = "degraded_denied"
)

// metrics count rate-limit decisions (seed 000 §11). Their labels are the route
// (a value of the api_route allow-list), the deciding limit's scope and the
// result; never a subject, an address or a key.
type metrics struct {
	decisions     *prometheus.CounterVec
	refundsFailed *prometheus.CounterVec
}

// newMetrics registers han_api_ratelimit_decisions_total and
// han_api_ratelimit_refund_failures_total on reg (nil: nowhere).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	set := promreg.On(reg)
	m := &metrics{
		decisions:     set.CounterVec("han_api_ratelimit_decisions_total", "Rate-limit decisions of api-backend by route, deciding scope and result (allowed, denied, unavailable, degraded_allowed, degraded_denied).", "route", "scope", "result"),
		refundsFailed: set.CounterVec("han_api_ratelimit_refund_failures_total", "Charges of requests a later limit denied that could not be given back (they stay until their window ends), by route and scope.", "route", "scope"),
	}
	return m, set.Err()
}

func (m *metrics) observe(route vm1.APIRoute, scope Scope, result string) {
	m.decisions.WithLabelValues(string(route), string(scope), result).Inc()
}

func (m *metrics) refundFailed(route vm1.APIRoute, scope Scope) {
	m.refundsFailed.WithLabelValues(string(route), string(scope)).Inc()
}
