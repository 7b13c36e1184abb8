package safety

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/redis/go-redis/v9"
)

// WakeReason says why a worker is woken. A wake-up carries nothing else: no task
// id, no document; the worker claims its tasks from PostgreSQL (seed 004 §1).
type WakeReason string

// Wake reasons.
const (
	// WakeTasksReady is published when safety tasks were queued in PostgreSQL.
	WakeTasksReady WakeReason = "tasks_ready"
	// WakeSubscribed is never published: a Subscription delivers it itself each time
	// its subscription is (re)established, because notifications sent while it was
	// not may be lost. Poll once on it.
	WakeSubscribed WakeReason = "subscribed"
)

// Wakeup is one notification on han:safety:wakeup.
type Wakeup struct {
	Reason WakeReason
}

const tagWakeup = "wakeup/1"

// encodeWakeup encodes a publishable wake-up: ["wakeup/1", reason].
func encodeWakeup(w Wakeup) ([]byte, error) {
	if w.Reason != WakeTasksReady {
		return nil, &RecordError{Record: "wakeup", Field: "reason", Reason: "not a reason that is published", err: ErrInvalidWakeup}
	}
	e := newEncoder(tagWakeup, 1)
	e.str(string(w.Reason))
	b, err := e.bytes()
	if err == nil && len(b) > vm2.SafetyWakeupChannelMaxBytes {
		err = &RecordError{Record: "wakeup", Reason: "payload above the channel's max_bytes", err: ErrInvalidWakeup}
	}
	return b, err
}

func decodeWakeup(b []byte) (Wakeup, error) {
	d := newDecoder("wakeup", b, vm2.SafetyWakeupChannelMaxBytes, tagWakeup, 1, ErrInvalidWakeup)
	w := Wakeup{Reason: WakeReason(d.str("reason", 32))}
	if err := d.finish(); err != nil {
		return Wakeup{}, err
	}
	if w.Reason != WakeTasksReady {
		return Wakeup{}, &RecordError{Record: "wakeup", Field: "reason", Reason: "not a published reason", err: ErrInvalidWakeup}
	}
	return w, nil
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
	c       *Client
	ps      pubSub
	channel vm2.SafetyWakeupChannel
}

// NewWaker makes a Waker on c, whose Redis client must be able to PUBLISH and
// SUBSCRIBE (a *redis.Client, *redis.Ring or *redis.ClusterClient); else ErrNoPubSub.
func NewWaker(c *Client) (*Waker, error) {
	if c == nil {
		return nil, errors.New("safety: NewWaker: nil Client")
	}
	ps, ok := c.rdb.(pubSub)
	if !ok {
		return nil, fmt.Errorf("safety: NewWaker: %w", ErrNoPubSub)
	}
	return &Waker{c: c, ps: ps, channel: vm2.NewSafetyWakeupChannel()}, nil
}

// PublishResult reports a Publish.
type PublishResult struct {
	// Sent is false when Redis was unavailable and the wake-up was dropped.
	Sent bool
	// Receivers is how many subscriptions Redis delivered it to.
	Receivers int64
}

// Publish sends wk (Reason WakeTasksReady) within PublishTimeout. While Redis is
// unavailable it is dropped (Sent false) and counted; the workers' PostgreSQL polls
// find the tasks anyway.
func (w *Waker) Publish(ctx context.Context, wk Wakeup) (PublishResult, error) {
	b, err := encodeWakeup(wk)
	if err != nil {
		w.c.m.published.WithLabelValues(publishError).Inc()
		return PublishResult{}, err
	}
	n, err := call(ctx, w.c, w.c.opts.PublishTimeout, func(ctx context.Context) (int64, error) {
		return w.ps.Publish(ctx, w.channel.String(), b).Result()
	})
	switch {
	case errors.Is(err, errUnavailable):
		w.c.m.published.WithLabelValues(publishDropped).Inc()
		return PublishResult{}, nil
	case err != nil:
		w.c.m.published.WithLabelValues(publishError).Inc()
		return PublishResult{}, fmt.Errorf("safety: wake-up publish: %w", err)
	}
	w.c.m.published.WithLabelValues(publishSent).Inc()
	return PublishResult{Sent: true, Receivers: n}, nil
}

// Subscription receives wake-ups. It survives Redis outages: go-redis reconnects and
// subscribes again, and the Subscription then delivers WakeSubscribed.
type Subscription struct {
	c     <-chan Wakeup
	ps    *redis.PubSub
	done  chan struct{}
	once  sync.Once
	waker *Waker
}

// C delivers wake-ups. It holds at most one pending wake-up: a notification that
// arrives while one is pending is coalesced into it, since both mean "poll now". It
// is closed by Close.
func (s *Subscription) C() <-chan Wakeup { return s.c }

// Subscribe subscribes to han:safety:wakeup, trying Redis for at most
// PublishTimeout. It does not fail when Redis is down: the subscription is made when
// Redis is back, and WakeSubscribed says so.
func (w *Waker) Subscribe(ctx context.Context) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, w.c.opts.PublishTimeout)
	ps := w.ps.Subscribe(sctx, w.channel.String())
	cancel()
	in := ps.ChannelWithSubscriptions(redis.WithChannelSize(16))
	out := make(chan Wakeup, 1)
	s := &Subscription{c: out, ps: ps, done: make(chan struct{}), waker: w}
	w.c.m.subscribers.Inc()
	go func() {
		defer close(s.done)
		defer close(out)
		deliver := func(wk Wakeup) bool {
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
					w.c.m.received.WithLabelValues(receivedSubscribe).Inc()
					deliver(Wakeup{Reason: WakeSubscribed})
				}
			case *redis.Message:
				wk, err := decodeWakeup([]byte(m.Payload))
				switch {
				case err != nil:
					w.c.m.received.WithLabelValues(receivedInvalid).Inc()
				case deliver(wk):
					w.c.m.received.WithLabelValues(receivedDelivered).Inc()
				default:
					w.c.m.received.WithLabelValues(receivedCoalesced).Inc()
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
		s.waker.c.m.subscribers.Dec()
	})
	return err
}
