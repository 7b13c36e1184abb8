// Package waker is Message Safety's worker wake-up on its Redis (vm2): Pub/Sub
// on han:safety:wakeup only, nothing stored. A wake-up (safetyrecord.Wakeup)
// only ends a worker's wait early: workers poll PostgreSQL anyway, so losing
// one is harmless, and while Redis is unavailable publishes are dropped and
// counted (seed 004 §6, §8).
//
// Metrics, on the Client's Registerer: han_safety_wakeup_subscribers,
// han_safety_wakeup_published_total and han_safety_wakeup_received_total by
// result.
package waker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// ErrNoPubSub: the Client's Redis client cannot PUBLISH and SUBSCRIBE.
var ErrNoPubSub = errors.New("client without Pub/Sub")

// Result labels of the wake-up metrics.
const (
	// publishes
	publishSent    = "sent"
	publishDropped = "dropped"
	publishError   = "error"

	// notifications a subscription received
	receivedDelivered = "delivered"  // a notification handed to the subscriber
	receivedCoalesced = "coalesced"  // a notification while one was pending already
	receivedInvalid   = "invalid"    // a payload that is not a wake-up
	receivedSubscribe = "subscribed" // the subscription was (re)established (WakeSubscribed)
)

// metrics are the wake-up's collectors, shared by the Wakers of one Registerer.
type metrics struct {
	subscribers prometheus.Gauge
	published   *prometheus.CounterVec // result
	received    *prometheus.CounterVec // result
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := promreg.On(reg)
	m := &metrics{
		subscribers: s.Gauge("han_safety_wakeup_subscribers", "Open wake-up subscriptions of this process."),
		published:   s.CounterVec("han_safety_wakeup_published_total", "Wake-up publishes by result (sent, dropped: Redis unavailable, error).", "result"),
		received:    s.CounterVec("han_safety_wakeup_received_total", "Wake-up notifications received by result (delivered, coalesced, invalid), and (re)subscriptions (subscribed).", "result"),
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	// Every series exists from the start, so a dashboard sees zeros rather than no data.
	for _, r := range []string{publishSent, publishDropped, publishError} {
		m.published.WithLabelValues(r)
	}
	for _, r := range []string{receivedDelivered, receivedCoalesced, receivedInvalid, receivedSubscribe} {
		m.received.WithLabelValues(r)
	}
	return m, nil
}

// pubSub is what a Waker needs of the Redis client.
type pubSub interface {
	Publish(ctx context.Context, channel string, message any) *redis.IntCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Waker publishes and subscribes to the worker wake-up channel han:safety:wakeup:
// Pub/Sub only, nothing stored. Losing a wake-up is harmless, since workers poll
// PostgreSQL anyway; while Redis is unavailable, publishes are dropped and counted.
type Waker struct {
	c       *safetyredis.Client
	timeout time.Duration // the Client's PublishTimeout
	m       *metrics
	ps      pubSub
	channel vm2.SafetyWakeupChannel
}

// New makes a Waker on c, whose Redis client must be able to PUBLISH and
// SUBSCRIBE (a *redis.Client, *redis.Ring or *redis.ClusterClient); else ErrNoPubSub.
func New(c *safetyredis.Client) (*Waker, error) {
	if c == nil {
		return nil, errors.New("safety: waker.New: nil Client")
	}
	ps, ok := c.Redis().(pubSub)
	if !ok {
		return nil, fmt.Errorf("safety: waker.New: %w", ErrNoPubSub)
	}
	o := c.Options()
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("safety: waker.New: metrics: %w", err)
	}
	return &Waker{c: c, timeout: o.PublishTimeout, m: m, ps: ps, channel: vm2.NewSafetyWakeupChannel()}, nil
}

// PublishResult reports a Publish.
type PublishResult struct {
	// Sent is false when Redis was unavailable and the wake-up was dropped.
	Sent bool
	// Receivers is how many subscriptions Redis delivered it to.
	Receivers int64
}

// Publish sends wk (Reason safetyrecord.WakeTasksReady) within PublishTimeout. While Redis is
// unavailable it is dropped (Sent false) and counted; the workers' PostgreSQL polls
// find the tasks anyway.
func (w *Waker) Publish(ctx context.Context, wk safetyrecord.Wakeup) (PublishResult, error) {
	b, err := safetyrecord.EncodeWakeup(wk)
	if err != nil {
		w.m.published.WithLabelValues(publishError).Inc()
		return PublishResult{}, err
	}
	n, err := safetyredis.Do(ctx, w.c, w.timeout, func(ctx context.Context) (int64, error) {
		return w.ps.Publish(ctx, w.channel.String(), b).Result()
	})
	switch {
	case errors.Is(err, safetyredis.ErrUnavailable):
		w.m.published.WithLabelValues(publishDropped).Inc()
		return PublishResult{}, nil
	case err != nil:
		w.m.published.WithLabelValues(publishError).Inc()
		return PublishResult{}, fmt.Errorf("safety: wake-up publish: %w", err)
	}
	w.m.published.WithLabelValues(publishSent).Inc()
	return PublishResult{Sent: true, Receivers: n}, nil
}

// Subscription receives wake-ups. It survives Redis outages: go-redis reconnects and
// subscribes again, and the Subscription then delivers safetyrecord.WakeSubscribed.
type Subscription struct {
	c     <-chan safetyrecord.Wakeup
	ps    *redis.PubSub
	done  chan struct{}
	once  sync.Once
	waker *Waker
}

// C delivers wake-ups. It holds at most one pending wake-up: a notification that
// arrives while one is pending is coalesced into it, since both mean "poll now". It
// is closed by Close.
func (s *Subscription) C() <-chan safetyrecord.Wakeup { return s.c }

// Subscribe subscribes to han:safety:wakeup, trying Redis for at most
// PublishTimeout. It does not fail when Redis is down: the subscription is made when
// Redis is back, and safetyrecord.WakeSubscribed says so.
func (w *Waker) Subscribe(ctx context.Context) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, w.timeout)
	ps := w.ps.Subscribe(sctx, w.channel.String())
	cancel()
	in := ps.ChannelWithSubscriptions(redis.WithChannelSize(16))
	out := make(chan safetyrecord.Wakeup, 1)
	s := &Subscription{c: out, ps: ps, done: make(chan struct{}), waker: w}
	w.m.subscribers.Inc()
	go func() {
		defer close(s.done)
		defer close(out)
		deliver := func(wk safetyrecord.Wakeup) bool {
			select {
			case out <- wk:
				return true
			default:
				return false // one is pending: it means the same thing
			}
		}
		for msg := range in {
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					w.m.received.WithLabelValues(receivedSubscribe).Inc()
					deliver(safetyrecord.Wakeup{Reason: safetyrecord.WakeSubscribed})
				}
			case *redis.Message:
				wk, err := safetyrecord.DecodeWakeup([]byte(m.Payload))
				switch {
				case err != nil:
					w.m.received.WithLabelValues(receivedInvalid).Inc()
				case deliver(wk):
					w.m.received.WithLabelValues(receivedDelivered).Inc()
				default:
					w.m.received.WithLabelValues(receivedCoalesced).Inc()
				}
			}
		}
	}()
	return s, nil
}

// Close unsubscribes, closes C and waits for the Subscription's goroutine to end.
func (s *Subscription) Close() error {
	var err error
	s.once.Do(func() {
		err = s.ps.Close()
		<-s.done
		s.waker.m.subscribers.Dec()
	})
	return err
}
