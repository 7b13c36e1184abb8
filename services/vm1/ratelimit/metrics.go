package ratelimit

import (
	"github.com/hanchat/luagen/generated/vm1"
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

// Metrics counts rate-limit decisions (seed 000 §11). Its labels are the route
// (a value of the api_route allow-list), the deciding limit's scope and the
// result; never a subject, an address or a key.
type Metrics struct {
	decisions     *prometheus.CounterVec
	refundsFailed *prometheus.CounterVec
}

// NewMetrics registers han_api_ratelimit_decisions_total and
// han_api_ratelimit_refund_failures_total on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_api_ratelimit_decisions_total",
			Help: "Rate-limit decisions of api-backend by route, deciding scope and result (allowed, denied, unavailable, degraded_allowed, degraded_denied).",
		}, []string{"route", "scope", "result"}),
		refundsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_api_ratelimit_refund_failures_total",
			Help: "Charges of requests a later limit denied that could not be given back (they stay until their window ends), by route and scope.",
		}, []string{"route", "scope"}),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.refundsFailed} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observe(route vm1.APIRoute, scope Scope, result string) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(string(route), string(scope), result).Inc()
}

func (m *Metrics) refundFailed(route vm1.APIRoute, scope Scope) {
	if m == nil {
		return
	}
	m.refundsFailed.WithLabelValues(string(route), string(scope)).Inc()
}
