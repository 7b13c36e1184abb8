package pubsub

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values of the Subscriber's metrics: fixed sets only, never a channel,
// an id or an address.
const (
	dropOverflow  = "overflow"  // Events was full
	dropMalformed = "malformed" // a payload the Contract refused

	reconcileOK    = "ok"
	reconcileError = "error"

	sampleOK       = "ok"        // the connection's omem was read
	sampleNotFound = "not_found" // CLIENT LIST does not show the connection (disconnected, or behind a proxy)
	sampleError    = "error"     // CLIENT LIST failed
)

// metrics are the Subscriber's Prometheus collectors (seed 000 §11). Subscribers
// of one process that share a Registerer share them and count together.
type metrics struct {
	subscribers  prometheus.Gauge
	channels     prometheus.Gauge
	reconnects   prometheus.Counter
	dropped      *prometheus.CounterVec // reason
	reconciles   *prometheus.CounterVec // result
	outputBuffer prometheus.Gauge
	samples      *prometheus.CounterVec // result
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "han_rt_pubsub_subscribers",
			Help: "Subscribers of this process whose Pub/Sub connection is up and subscribed.",
		}),
		channels: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "han_rt_pubsub_channels",
			Help: "Channels the Subscribers of this process subscribe to.",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "han_rt_pubsub_reconnects_total",
			Help: "Pub/Sub connections lost and made again (each followed by a REST reconciliation of every channel).",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_rt_pubsub_dropped_total",
			Help: "Events dropped by the Subscriber, by reason (overflow: its reader fell behind; malformed: refused by the contract).",
		}, []string{"reason"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_rt_pubsub_reconciles_total",
			Help: "REST reconciliations the Subscriber asked for, by result (ok, error: retried after a backoff).",
		}, []string{"result"}),
		outputBuffer: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "han_rt_pubsub_output_buffer_bytes",
			Help: "Server-side output buffer (CLIENT LIST omem) of this process's subscriber connections at the last sample; the server disconnects one at client-output-buffer-limit pubsub.",
		}),
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "han_rt_pubsub_output_buffer_samples_total",
			Help: "Samples of the subscriber connection's output buffer by result (ok, not_found, error).",
		}, []string{"result"}),
	}
	var err error
	if m.subscribers, err = register(reg, m.subscribers); err != nil {
		return nil, err
	}
	if m.channels, err = register(reg, m.channels); err != nil {
		return nil, err
	}
	if m.reconnects, err = register(reg, m.reconnects); err != nil {
		return nil, err
	}
	if m.dropped, err = register(reg, m.dropped); err != nil {
		return nil, err
	}
	if m.reconciles, err = register(reg, m.reconciles); err != nil {
		return nil, err
	}
	if m.outputBuffer, err = register(reg, m.outputBuffer); err != nil {
		return nil, err
	}
	if m.samples, err = register(reg, m.samples); err != nil {
		return nil, err
	}
	for _, r := range []string{dropOverflow, dropMalformed} {
		m.dropped.WithLabelValues(r)
	}
	for _, r := range []string{reconcileOK, reconcileError} {
		m.reconciles.WithLabelValues(r)
	}
	for _, r := range []string{sampleOK, sampleNotFound, sampleError} {
		m.samples.WithLabelValues(r)
	}
	return m, nil
}

// register registers c on reg, or returns the collector another Subscriber of
// the process registered there already under the same description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}
