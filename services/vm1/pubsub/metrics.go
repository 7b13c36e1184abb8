package pubsub

import "github.com/prometheus/client_golang/prometheus"

// metrics are a Subscriber's Prometheus collectors. They have no labels: a
// channel name holds a dialog or user id.
type metrics struct {
	malformed       prometheus.Counter
	connectionsLost prometheus.Counter
}

// newMetrics registers the collectors on reg (nil: a private registry).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "han_rt_pubsub_malformed_total",
			Help: "Realtime payloads the Subscriber dropped as malformed, too large or not allowed by its contract.",
		}),
		connectionsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "han_rt_pubsub_connections_lost_total",
			Help: "Subscriber connections that ended (network error, silence, a failed SUBSCRIBE) and were made again.",
		}),
	}
	for _, c := range []prometheus.Collector{m.malformed, m.connectionsLost} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
