package safetycache

import (
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/prometheus/client_golang/prometheus"
)

// Result labels of the lookups; the writes' are the SetOutcome values and
// writeError. Every label takes its value from these sets or safetyrecord.Kinds.
const (
	lookupHit         = "hit"         // the active generation's entry
	lookupMiss        = "miss"        // no entry
	lookupStale       = "stale"       // an entry of another generation: a miss
	lookupUnavailable = "unavailable" // Redis unreachable or too slow: a miss
	lookupCorrupt     = "corrupt"     // a value that is not a valid record: a miss and ErrCorrupt
	lookupError       = "error"       // any other error (refused by Redis, cancelled by the caller)

	writeError = "error"
)

// metrics are the caches' Prometheus collectors, shared by the Caches of one
// Registerer.
type metrics struct {
	lookups      *prometheus.CounterVec // kind, result
	writes       *prometheus.CounterVec // kind, result
	ttlClamped   *prometheus.CounterVec // kind
	dnsTTLCapped prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := promreg.On(reg)
	m := &metrics{
		lookups:      s.CounterVec("han_safety_cache_lookups_total", "Hot-cache reads by kind and result (hit, miss, stale, unavailable, corrupt, error); every result but hit is a miss.", "kind", "result"),
		writes:       s.CounterVec("han_safety_cache_writes_total", "Hot-cache writes by kind and result (written, stale, dropped, skipped, error).", "kind", "result"),
		ttlClamped:   s.CounterVec("han_safety_cache_ttl_clamped_total", "Cache writes whose TTL from the active config was above the key's maximum and was clamped to it.", "kind"),
		dnsTTLCapped: s.Counter("han_safety_dns_ttl_capped_total", "DNS answers whose own TTL was above the hard maximum (900 s, or the active policy's when lower) and was capped."),
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	// Every series of a fixed label set exists from the start, so a dashboard sees
	// zeros rather than no data.
	for _, k := range safetyrecord.Kinds {
		for _, r := range []string{lookupHit, lookupMiss, lookupStale, lookupUnavailable, lookupCorrupt, lookupError} {
			m.lookups.WithLabelValues(string(k), r)
		}
		for _, r := range []string{string(SetWritten), string(SetStale), string(SetDropped), string(SetSkipped), writeError} {
			m.writes.WithLabelValues(string(k), r)
		}
		m.ttlClamped.WithLabelValues(string(k))
	}
	return m, nil
}
