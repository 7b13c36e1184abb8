package safety

import (
	"errors"

	"github.com/hanchat/luagen/internal/promreg"
	"github.com/prometheus/client_golang/prometheus"
)

// Label values. Every label of every metric takes its value from these sets, from
// Kinds, or from the caller names a Limiter was configured with.
const (
	// cache lookups
	lookupHit         = "hit"         // the active generation's entry
	lookupMiss        = "miss"        // no entry
	lookupStale       = "stale"       // an entry of another generation: a miss
	lookupUnavailable = "unavailable" // Redis unreachable or too slow: a miss
	lookupCorrupt     = "corrupt"     // a value that is not a valid record: a miss and ErrCorrupt
	lookupError       = "error"       // any other error (refused by Redis, cancelled by the caller)

	// cache writes: the SetOutcome values, plus
	writeError = "error"

	// rate-limit decisions
	decisionAllowed = "allowed"
	decisionDenied  = "denied"

	// wake-up publishes
	publishSent    = "sent"
	publishDropped = "dropped"
	publishError   = "error"

	// wake-ups a subscription received
	receivedDelivered = "delivered"  // a notification handed to the subscriber
	receivedCoalesced = "coalesced"  // a notification while one was pending already
	receivedInvalid   = "invalid"    // a payload that is not a wake-up
	receivedSubscribe = "subscribed" // the subscription was (re)established (WakeSubscribed)
)

// metrics are the package's Prometheus collectors.
type metrics struct {
	lookups       *prometheus.CounterVec // kind, result
	writes        *prometheus.CounterVec // kind, result
	ttlClamped    *prometheus.CounterVec // kind
	dnsTTLCapped  prometheus.Counter
	rateDecisions *prometheus.CounterVec // caller, decision, source
	subscribers   prometheus.Gauge
	published     *prometheus.CounterVec // result
	received      *prometheus.CounterVec // result
	degraded      prometheus.Gauge
	degradations  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_safety_cache_lookups_total",
			Help: "Hot-cache reads by kind and result (hit, miss, stale, unavailable, corrupt, error); every result but hit is a miss.",
		}, []string{"kind", "result"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_safety_cache_writes_total",
			Help: "Hot-cache writes by kind and result (written, stale, dropped, skipped, error).",
		}, []string{"kind", "result"}),
		ttlClamped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_safety_cache_ttl_clamped_total",
			Help: "Cache writes whose TTL from the active config was above the key's maximum and was clamped to it.",
		}, []string{"kind"}),
		dnsTTLCapped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "han_safety_dns_ttl_capped_total",
			Help: "DNS answers whose own TTL was above the hard maximum (900 s, or the active policy's when lower) and was capped.",
		}),
		rateDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_safety_rate_limit_decisions_total",
			Help: "Rate-limit decisions by caller, decision (allowed, denied) and source (redis, local: fail-open while Redis is unavailable, closed: fail-closed while it is).",
		}, []string{"caller", "decision", "source"}),
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "han_safety_wakeup_subscribers",
			Help: "Open wake-up subscriptions of this process.",
		}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_safety_wakeup_published_total",
			Help: "Wake-up publishes by result (sent, dropped: Redis unavailable, error).",
		}, []string{"result"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_safety_wakeup_received_total",
			Help: "Wake-up notifications received by result (delivered, coalesced, invalid), and (re)subscriptions (subscribed).",
		}, []string{"result"}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "han_safety_redis_degraded",
			Help: "1 while Message Safety's Redis is unreachable and its hot paths run degraded (seed 004 §6), else 0.",
		}),
		degradations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "han_safety_redis_degradations_total",
			Help: "Times Message Safety's Redis became unreachable.",
		}),
	}
	if err := errors.Join(promreg.Register(reg, &m.lookups), promreg.Register(reg, &m.writes), promreg.Register(reg, &m.ttlClamped),
		promreg.Register(reg, &m.dnsTTLCapped), promreg.Register(reg, &m.rateDecisions), promreg.Register(reg, &m.subscribers),
		promreg.Register(reg, &m.published), promreg.Register(reg, &m.received), promreg.Register(reg, &m.degraded),
		promreg.Register(reg, &m.degradations)); err != nil {
		return nil, err
	}
	// Every series of a fixed label set exists from the start, so a dashboard sees
	// zeros rather than no data.
	for _, k := range Kinds {
		for _, r := range []string{lookupHit, lookupMiss, lookupStale, lookupUnavailable, lookupCorrupt, lookupError} {
			m.lookups.WithLabelValues(string(k), r)
		}
		for _, r := range []string{string(SetWritten), string(SetStale), string(SetDropped), string(SetSkipped), writeError} {
			m.writes.WithLabelValues(string(k), r)
		}
		m.ttlClamped.WithLabelValues(string(k))
	}
	for _, r := range []string{publishSent, publishDropped, publishError} {
		m.published.WithLabelValues(r)
	}
	for _, r := range []string{receivedDelivered, receivedCoalesced, receivedInvalid, receivedSubscribe} {
		m.received.WithLabelValues(r)
	}
	return m, nil
}
