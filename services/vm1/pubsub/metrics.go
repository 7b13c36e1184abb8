package pubsub

import (
	"errors"

	"github.com/hanchat/luagen/internal/promreg"
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
	if err := errors.Join(promreg.Register(reg, &m.subscribers), promreg.Register(reg, &m.channels), promreg.Register(reg, &m.reconnects),
		promreg.Register(reg, &m.dropped), promreg.Register(reg, &m.reconciles), promreg.Register(reg, &m.outputBuffer), promreg.Register(reg, &m.samples)); err != nil {
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
