package pubsub

import (
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
	set := promreg.On(reg)
	m := &metrics{
		subscribers:  set.Gauge("han_rt_pubsub_subscribers", "Subscribers of this process whose Pub/Sub connection is up and subscribed."),
		channels:     set.Gauge("han_rt_pubsub_channels", "Channels the Subscribers of this process subscribe to."),
		reconnects:   set.Counter("han_rt_pubsub_reconnects_total", "Pub/Sub connections lost and made again (each followed by a REST reconciliation of every channel)."),
		dropped:      set.CounterVec("han_rt_pubsub_dropped_total", "Events dropped by the Subscriber, by reason (overflow: its reader fell behind; malformed: refused by the contract).", "reason"),
		reconciles:   set.CounterVec("han_rt_pubsub_reconciles_total", "REST reconciliations the Subscriber asked for, by result (ok, error: retried after a backoff).", "result"),
		outputBuffer: set.Gauge("han_rt_pubsub_output_buffer_bytes", "Server-side output buffer (CLIENT LIST omem) of this process's subscriber connections at the last sample; the server disconnects one at client-output-buffer-limit pubsub."),
		samples:      set.CounterVec("han_rt_pubsub_output_buffer_samples_total", "Samples of the subscriber connection's output buffer by result (ok, not_found, error).", "result"),
	}
	if err := set.Err(); err != nil {
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
