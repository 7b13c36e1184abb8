package pubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// GapReason says why the Subscriber asks for a reconciliation.
type GapReason string

// The reasons of a Gap.
const (
	// Subscribed: the channels were just subscribed; events published before
	// that were not seen.
	Subscribed GapReason = "subscribed"
	// Reconnected: the connection was lost and the channels are subscribed
	// again; events published meanwhile are lost.
	Reconnected GapReason = "reconnected"
	// Overflow: the Subscriber dropped events of these channels because the
	// reader of Events fell behind.
	Overflow GapReason = "overflow"
)

// Gap is a set of channels on which events may have been missed.
type Gap struct {
	Reason   GapReason
	Channels []Channel // sorted by name
}

// Delivery is one decoded event and the channel it came on.
type Delivery struct {
	Channel Channel
	Event   Event
}

// ReconcileFunc runs the application's REST reconciliation of the gap's
// channels. The Subscriber calls it from its own goroutine, after the channels
// are subscribed (so no later event is missed), and reads no events until it
// returns; an error makes it call again after a backoff until it succeeds or
// Run ends.
type ReconcileFunc func(ctx context.Context, g Gap) error

// Options configure a Subscriber. The zero value is valid.
type Options struct {
	// Channels are subscribed when Run starts; Subscribe adds more later.
	Channels []Channel
	// Buffer is the capacity of Events; zero means 256. When it is full, events
	// are dropped and their channels reconciled once the reader caught up.
	Buffer int
	// MinBackoff and MaxBackoff bound the wait between reconnect (and failed
	// reconcile) attempts, doubled at each failure, with jitter; zero means
	// 50ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// PingEvery is how long the connection may stay silent before a PING; with
	// no answer for as long again it counts as lost. Zero means 30s.
	PingEvery time.Duration
	// Registerer receives the metrics (seed 000 §11): subscribers, reconnects,
	// drops, reconciliations and the sampled output buffer. Nil: registered
	// nowhere. Subscribers of one process may share it and count together.
	Registerer prometheus.Registerer
	// Monitor, when set, is sampled every SampleEvery for the server-side
	// output buffer (CLIENT LIST omem) of the subscriber connection; the
	// Subscriber then adds a dial hook to its client to learn that
	// connection's address. See Monitor for the ACL it needs.
	Monitor Monitor
	// SampleEvery is the sampling interval, at least 10ms; zero means
	// DefaultSampleEvery.
	SampleEvery time.Duration
	// Logger receives a warning for each dropped malformed payload (the channel
	// and what was wrong, never the payload) and for each lost connection (why:
	// a network error, silence, a failed SUBSCRIBE). Nil: no log.
	Logger *slog.Logger
}

// Stats are a Subscriber's counters since it was made.
type Stats struct {
	Delivered       uint64 // events put on Events
	Malformed       uint64 // payloads dropped as malformed or not allowed
	Overflowed      uint64 // events dropped because Events was full
	Reconnects      uint64 // connections lost and made again
	Reconciles      uint64 // ReconcileFunc calls that succeeded
	ReconcileErrors uint64 // ReconcileFunc calls that failed
}

// Subscriber receives the events of a set of channels on one connection of its
// own, reconnects when the connection is lost, and calls its ReconcileFunc for
// every channel whose events may have been missed. Run runs it; Subscribe and
// Unsubscribe change its channels at any time.
type Subscriber struct {
	client    redis.UniversalClient
	contract  *Contract
	reconcile ReconcileFunc
	o         Options
	log       *slog.Logger
	events    chan Delivery

	// sendMu keeps Subscribe and Unsubscribe in order: each updates the state
	// and sends its command before the next one starts, so Redis sees the
	// commands in the order the state changed.
	sendMu sync.Mutex

	mu        sync.Mutex
	channels  map[string]Channel
	awaiting  map[string]*pending  // SUBSCRIBEs sent on the live session, not all confirmed yet
	confirmed map[string]GapReason // confirmed while others are still awaited
	ps        *redis.PubSub        // the live session's, or nil

	started  atomic.Bool
	overflow map[string]bool // run goroutine only: channels that dropped events

	m        *metrics
	connAddr atomic.Value // string: the live session's local address, from the dial hook
	omem     atomic.Int64 // this Subscriber's part of han_rt_pubsub_output_buffer_bytes

	delivered, malformed, overflowed, reconnects, reconciles, reconcileErrors atomic.Uint64
}

// NewSubscriber returns a Subscriber on client (a client of VM1; Pub/Sub
// ignores the database) that decodes payloads with contract and calls
// reconcile for every gap. It validates o; it connects when Run is called.
func NewSubscriber(client redis.UniversalClient, contract *Contract, reconcile ReconcileFunc, o Options) (*Subscriber, error) {
	if o.Buffer == 0 {
		o.Buffer = 256
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = 50 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.PingEvery == 0 {
		o.PingEvery = 30 * time.Second
	}
	if o.SampleEvery == 0 {
		o.SampleEvery = DefaultSampleEvery
	}
	switch {
	case o.Buffer < 1:
		return nil, fmt.Errorf("pubsub: NewSubscriber: Buffer %d: want 1 or more", o.Buffer)
	case o.MinBackoff < 0 || o.MaxBackoff < o.MinBackoff:
		return nil, fmt.Errorf("pubsub: NewSubscriber: backoff %s..%s: want 0 <= MinBackoff <= MaxBackoff", o.MinBackoff, o.MaxBackoff)
	case o.PingEvery < 0:
		return nil, fmt.Errorf("pubsub: NewSubscriber: PingEvery %s: want positive", o.PingEvery)
	case o.SampleEvery < 10*time.Millisecond:
		return nil, fmt.Errorf("pubsub: NewSubscriber: SampleEvery %s: want at least 10ms", o.SampleEvery)
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("pubsub: NewSubscriber: metrics: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Subscriber{
		client:    client,
		contract:  contract,
		reconcile: reconcile,
		o:         o,
		log:       log,
		events:    make(chan Delivery, o.Buffer),
		channels:  map[string]Channel{},
		awaiting:  map[string]*pending{},
		confirmed: map[string]GapReason{},
		overflow:  map[string]bool{},
		m:         m,
	}
	for _, c := range o.Channels {
		if c.name == "" {
			return nil, errors.New("pubsub: NewSubscriber: Options.Channels: empty Channel (build it with Dialog or User)")
		}
		s.channels[c.name] = c
	}
	if o.Monitor != nil {
		client.AddHook(dialRecorder{})
	}
	return s, nil
}

// Events delivers decoded events in the order they arrived. It is closed when
// Run returns.
func (s *Subscriber) Events() <-chan Delivery { return s.events }

// Stats reads the counters.
func (s *Subscriber) Stats() Stats {
	return Stats{
		Delivered:       s.delivered.Load(),
		Malformed:       s.malformed.Load(),
		Overflowed:      s.overflowed.Load(),
		Reconnects:      s.reconnects.Load(),
		Reconciles:      s.reconciles.Load(),
		ReconcileErrors: s.reconcileErrors.Load(),
	}
}

// Subscribe adds channels. Once Redis confirms them, the ReconcileFunc is called for
// them with reason Subscribed. When the live connection cannot take the
// command, the Subscriber reconnects, which subscribes and reconciles every
// channel; so Subscribe fails only for an empty Channel.
func (s *Subscriber) Subscribe(ctx context.Context, channels ...Channel) error {
	for _, c := range channels {
		if c.name == "" {
			return errors.New("pubsub: subscribe: empty Channel (build it with Dialog or User)")
		}
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.mu.Lock()
	var names []string
	for _, c := range channels {
		if _, ok := s.channels[c.name]; !ok {
			s.channels[c.name] = c
			names = append(names, c.name)
		}
	}
	ps := s.ps
	if ps != nil {
		for _, n := range names {
			s.await(n, Subscribed)
		}
	}
	s.mu.Unlock()
	if ps == nil || len(names) == 0 {
		return nil // the next session subscribes them
	}
	if err := ps.Subscribe(ctx, names...); err != nil {
		_ = ps.Close() // the session ends; the next one subscribes every channel
	}
	return nil
}

// Unsubscribe removes channels; events of theirs still in flight are dropped.
// When the live connection cannot take the command, the Subscriber reconnects
// without them.
func (s *Subscriber) Unsubscribe(ctx context.Context, channels ...Channel) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.mu.Lock()
	var names []string
	for _, c := range channels {
		if _, ok := s.channels[c.name]; ok {
			// s.awaiting keeps the channel's outstanding SUBSCRIBEs: their
			// confirmations still come, and must not be taken for the
			// confirmation of a later Subscribe.
			delete(s.channels, c.name)
			delete(s.confirmed, c.name)
			names = append(names, c.name)
		}
	}
	ps := s.ps
	s.mu.Unlock()
	if ps == nil || len(names) == 0 {
		return
	}
	if err := ps.Unsubscribe(ctx, names...); err != nil {
		_ = ps.Close()
	}
}

// Run connects, subscribes and delivers events until ctx ends, reconnecting with
// backoff whenever the connection is lost. It returns ctx's error, and closes
// Events. Run may be called once.
func (s *Subscriber) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("pubsub: Run called twice")
	}
	defer close(s.events)
	if s.o.Monitor != nil {
		sampling, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); s.sampleLoop(sampling) }()
		defer func() { stop(); <-done; s.setOutputBuffer(0) }()
	}
	backoff := s.o.MinBackoff
	reason := Subscribed
	for {
		subscribed, err := s.session(ctx, reason)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("pubsub: connection lost; reconnecting", "err", err)
		if subscribed {
			backoff = s.o.MinBackoff
		}
		reason = Reconnected
		if !sleep(ctx, jitter(backoff)) {
			return ctx.Err()
		}
		backoff = min(2*backoff, s.o.MaxBackoff)
	}
}

// errSilent: no answer to a PING within PingEvery.
var errSilent = errors.New("pubsub: connection silent: no answer to PING")

// session is the life of one connection: subscribe every channel, reconcile
// once Redis confirmed them, then deliver until the connection fails. It
// reports whether the subscription was confirmed.
func (s *Subscriber) session(ctx context.Context, reason GapReason) (subscribed bool, err error) {
	ctx = context.WithValue(ctx, sessionKey{}, s) // the dial hook records this session's address
	defer s.connAddr.Store("")
	defer func() {
		if subscribed {
			s.m.subscribers.Dec()
		}
	}()
	ps := s.client.Subscribe(ctx)
	defer func() { _ = ps.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer stop()

	s.mu.Lock()
	s.ps = ps
	clear(s.awaiting)
	clear(s.confirmed)
	names := make([]string, 0, len(s.channels))
	for n := range s.channels {
		names = append(names, n)
		s.await(n, reason)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.ps = nil
		s.mu.Unlock()
	}()
	clear(s.overflow) // a new session reconciles every channel anyway

	if len(names) > 0 {
		if err := ps.Subscribe(ctx, names...); err != nil {
			return false, err
		}
	} else {
		subscribed = true
		s.m.subscribers.Inc()
		s.countReconnect(reason)
	}
	// flush reconciles the channels whose subscription Redis confirmed, once
	// none is awaited any more, before any later message is read.
	flush := func() error {
		gaps := s.ready()
		if len(gaps) > 0 && !subscribed {
			subscribed = true
			s.m.subscribers.Inc()
			s.countReconnect(reason)
		}
		for _, g := range gaps {
			if err := s.reconcileGap(ctx, g); err != nil {
				return err
			}
		}
		return nil
	}
	lastRead := time.Now()
	var pingSent time.Time
	for {
		if err := flush(); err != nil {
			return subscribed, err
		}
		if len(s.overflow) > 0 && len(s.events) <= cap(s.events)/2 {
			if err := s.reconcileOverflow(ctx); err != nil {
				return subscribed, err
			}
		}
		wait := s.o.PingEvery
		if len(s.overflow) > 0 {
			wait = min(wait, 10*time.Millisecond)
		}
		msg, err := ps.ReceiveTimeout(ctx, wait)
		if err != nil {
			if !isTimeout(err) {
				return subscribed, err
			}
			now := time.Now()
			switch {
			case !pingSent.IsZero() && now.Sub(pingSent) >= s.o.PingEvery:
				return subscribed, errSilent
			case pingSent.IsZero() && now.Sub(lastRead) >= s.o.PingEvery:
				if err := ps.Ping(ctx); err != nil {
					return subscribed, err
				}
				pingSent = now
			}
			continue
		}
		lastRead, pingSent = time.Now(), time.Time{}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				s.confirm(m.Channel) // reconciled by flush, before the next read
			}
		case *redis.Message:
			s.handle(m)
		}
	}
}

// pending is a channel's SUBSCRIBEs sent on the live session and not confirmed
// yet, and why it will need a reconciliation once the last one is.
type pending struct {
	sent   int
	reason GapReason
}

// await records one more SUBSCRIBE of name sent on the live session; s.mu is
// held. A reconnection's reason outranks a later Subscribe's.
func (s *Subscriber) await(name string, reason GapReason) {
	p := s.awaiting[name]
	if p == nil {
		p = &pending{reason: reason}
		s.awaiting[name] = p
	} else if p.reason != Reconnected {
		p.reason = reason
	}
	p.sent++
}

// confirm records Redis's confirmation of one SUBSCRIBE of name. Confirmations
// come in the order the commands were sent, so the channel is subscribed for good
// (no UNSUBSCRIBE sent after the last SUBSCRIBE can undo it) only once all its
// outstanding SUBSCRIBEs are confirmed: Subscribe, Unsubscribe, Subscribe of one
// channel in one round trip reconciles after the second SUBSCRIBE, not the first.
func (s *Subscriber) confirm(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.awaiting[name]
	if p == nil {
		return
	}
	if p.sent--; p.sent > 0 {
		return
	}
	delete(s.awaiting, name)
	if _, ok := s.channels[name]; ok {
		s.confirmed[name] = p.reason
	}
}

// ready returns, once no subscription is awaited any more, the gaps of the
// channels confirmed since the last call, by reason.
func (s *Subscriber) ready() []Gap {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.awaiting) > 0 || len(s.confirmed) == 0 {
		return nil
	}
	byReason := map[GapReason][]Channel{}
	for n, r := range s.confirmed {
		if c, ok := s.channels[n]; ok {
			byReason[r] = append(byReason[r], c)
		}
	}
	clear(s.confirmed)
	var gaps []Gap
	for _, r := range []GapReason{Reconnected, Subscribed} {
		if cs := byReason[r]; len(cs) > 0 {
			slices.SortFunc(cs, func(a, b Channel) int { return strings.Compare(a.name, b.name) })
			gaps = append(gaps, Gap{Reason: r, Channels: cs})
		}
	}
	return gaps
}

// countReconnect counts a session that replaced a lost one, once subscribed.
func (s *Subscriber) countReconnect(reason GapReason) {
	if reason == Reconnected {
		s.reconnects.Add(1)
		s.m.reconnects.Inc()
	}
}

// handle decodes one message and delivers it, or drops it.
func (s *Subscriber) handle(m *redis.Message) {
	s.mu.Lock()
	ch, ok := s.channels[m.Channel]
	s.mu.Unlock()
	if !ok {
		return // unsubscribed meanwhile
	}
	ev, err := s.contract.Decode([]byte(m.Payload), ch.maxBytes)
	if err != nil {
		s.malformed.Add(1)
		s.m.dropped.WithLabelValues(dropMalformed).Inc()
		s.log.Warn("pubsub: malformed payload dropped", "channel", ch.name, "err", err)
		return
	}
	select {
	case s.events <- Delivery{Channel: ch, Event: ev}:
		s.delivered.Add(1)
	default:
		s.overflowed.Add(1)
		s.m.dropped.WithLabelValues(dropOverflow).Inc()
		s.overflow[ch.name] = true
	}
}

// reconcileOverflow reconciles the channels that dropped events, once the
// reader of Events has room again.
func (s *Subscriber) reconcileOverflow(ctx context.Context) error {
	s.mu.Lock()
	var cs []Channel
	for n := range s.overflow {
		if c, ok := s.channels[n]; ok {
			cs = append(cs, c)
		}
	}
	s.mu.Unlock()
	clear(s.overflow)
	if len(cs) == 0 {
		return nil
	}
	slices.SortFunc(cs, func(a, b Channel) int { return strings.Compare(a.name, b.name) })
	return s.reconcileGap(ctx, Gap{Reason: Overflow, Channels: cs})
}

// reconcileGap calls the ReconcileFunc until it succeeds or ctx ends.
func (s *Subscriber) reconcileGap(ctx context.Context, g Gap) error {
	backoff := s.o.MinBackoff
	for {
		err := s.reconcile(ctx, g)
		if err == nil {
			s.reconciles.Add(1)
			s.m.reconciles.WithLabelValues(reconcileOK).Inc()
			return nil
		}
		s.reconcileErrors.Add(1)
		s.m.reconciles.WithLabelValues(reconcileError).Inc()
		if !sleep(ctx, jitter(backoff)) {
			return ctx.Err()
		}
		backoff = min(2*backoff, s.o.MaxBackoff)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// jitter is d plus up to half of d.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d + rand.N(d/2+1)
}

// sleep waits d or until ctx ends, and reports whether it waited all of d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
