package pubsub_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/logtest"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// app stands for the application: db is its source of truth (PostgreSQL, in
// production), applied what its client state holds. Events reach the state
// through Pub/Sub deliveries and through reconciliation, which reads db.
type app struct {
	mu        sync.Mutex
	db        []pubsub.Event
	applied   map[string]bool
	delivered []string // event ids in delivery order
	gaps      []pubsub.Gap
	fail      int // reconcile calls still to fail
}

func newApp() *app { return &app{applied: map[string]bool{}} }

func (a *app) reconcile(_ context.Context, g pubsub.Gap) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail > 0 {
		a.fail--
		return errors.New("REST reconciliation unavailable")
	}
	for _, ev := range a.db {
		a.applied[ev.ID] = true
	}
	a.gaps = append(a.gaps, g)
	return nil
}

func (a *app) record(ev pubsub.Event) {
	a.mu.Lock()
	a.db = append(a.db, ev)
	a.mu.Unlock()
}

func (a *app) consume(sub *pubsub.Subscriber) {
	for d := range sub.Events() {
		a.mu.Lock()
		a.applied[d.Event.ID] = true
		a.delivered = append(a.delivered, d.Event.ID)
		a.mu.Unlock()
	}
}

func (a *app) snapshot() (gaps []pubsub.Gap, delivered []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.gaps), slices.Clone(a.delivered)
}

func (a *app) hasApplied(ids ...string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		if !a.applied[id] {
			return false
		}
	}
	return true
}

// dialGate holds new connections back while blocked, so a test decides when a
// lost connection may come back. The connections it makes can also hold back
// what is written on them (as a slow network would: the writer does not wait),
// and the bytes each read returns.
type dialGate struct {
	mu            sync.Mutex
	blocked       chan struct{}
	writes, reads chan struct{} // closed when held writes (reads) may go on
	queued        atomic.Int64  // writes not yet passed on
}

// hold makes *ch a channel to wait on, if it is not one already.
func (g *dialGate) hold(ch *chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if *ch == nil {
		*ch = make(chan struct{})
	}
}

// release lets every waiter of *ch go on.
func (g *dialGate) release(ch *chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if *ch != nil {
		close(*ch)
		*ch = nil
	}
}

func (g *dialGate) holdWrites()    { g.hold(&g.writes) }
func (g *dialGate) releaseWrites() { g.release(&g.writes) }
func (g *dialGate) holdReads()     { g.hold(&g.reads) }
func (g *dialGate) releaseReads()  { g.release(&g.reads) }

// wait waits while *ch is held.
func (g *dialGate) wait(ch *chan struct{}) {
	g.mu.Lock()
	w := *ch
	g.mu.Unlock()
	if w != nil {
		<-w
	}
}

// gatedConn is a connection of a dialGate. Write queues the bytes and returns;
// a goroutine of the connection passes them on in order, waiting while writes
// are held. Read waits, while reads are held, before it returns what it read.
type gatedConn struct {
	net.Conn
	g      *dialGate
	mu     sync.Mutex
	closed bool
	out    chan []byte
}

func newGatedConn(c net.Conn, g *dialGate) *gatedConn {
	gc := &gatedConn{Conn: c, g: g, out: make(chan []byte, 1024)}
	go func() {
		for b := range gc.out {
			g.wait(&g.writes)
			_, err := c.Write(b)
			g.queued.Add(-1)
			if err != nil {
				_ = c.Close()
			}
		}
	}()
	return gc
}

func (c *gatedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	c.g.queued.Add(1)
	c.out <- bytes.Clone(b)
	return len(b), nil
}

func (c *gatedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.g.wait(&c.g.reads)
	return n, err
}

func (c *gatedConn) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.out)
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

func (g *dialGate) block() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.blocked == nil {
		g.blocked = make(chan struct{})
	}
}

func (g *dialGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.blocked != nil {
		close(g.blocked)
		g.blocked = nil
	}
}

func (g *dialGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	b := g.blocked
	g.mu.Unlock()
	if b != nil {
		select {
		case <-b:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return newGatedConn(c, g), nil
}

// The messages the Subscriber logs.
const (
	lostMsg      = "pubsub: connection lost; reconnecting"
	malformedMsg = "pubsub: malformed payload dropped"
)

type rig struct {
	srv  *redistest.Server
	logs *logtest.Recorder // what the Subscriber logged
	reg  *prometheus.Registry
	pub  *pubsub.Publisher
	raw  *redis.Client // a plain client for PUBSUB, CLIENT and raw PUBLISH
	sub  *pubsub.Subscriber
	app  *app
	gate *dialGate
	stop func() error // cancels Run and returns its error
}

func startRig(t *testing.T, protocol int, o pubsub.Options, channels ...pubsub.Channel) *rig {
	t.Helper()
	return startRigApp(t, protocol, o, newApp(), channels...)
}

// startRigApp is startRig with an app the test prepared before Run starts.
func startRigApp(t *testing.T, protocol int, o pubsub.Options, a *app, channels ...pubsub.Channel) *rig {
	t.Helper()
	r := &rig{srv: redistest.Start(t), app: a, gate: &dialGate{}, reg: prometheus.NewRegistry()}
	r.raw = r.srv.Client(vm1.DB1)
	r.pub = pubsub.NewPublisher(r.srv.Client(vm1.DB1), testContract(t))
	subClient := r.srv.Client(vm1.DB1, func(o *redis.Options) {
		o.Protocol = protocol
		o.Dialer = r.gate.dial
		o.MaxRetries = -1
	})
	o.Logger, r.logs = logtest.New()
	o.Registerer = r.reg
	o.Channels = channels
	if o.MinBackoff == 0 {
		o.MinBackoff, o.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
	}
	var err error
	if r.sub, err = pubsub.NewSubscriber(subClient, testContract(t), r.app.reconcile, o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.sub.Run(ctx) }()
	consumed := make(chan struct{})
	if o.Buffer == 0 {
		go func() { r.app.consume(r.sub); close(consumed) }()
	} else {
		close(consumed) // the test reads Events itself
	}
	var once sync.Once
	var runErr error
	r.stop = func() error {
		once.Do(func() {
			r.gate.open()
			r.gate.releaseWrites()
			r.gate.releaseReads()
			cancel()
			runErr = <-done
			<-consumed
		})
		return runErr
	}
	t.Cleanup(func() { _ = r.stop() })
	return r
}

func (r *rig) publish(t *testing.T, ch pubsub.Channel, seq int64) (pubsub.Event, int64) {
	t.Helper()
	ev := pubsub.Event{ID: newUUID(t), Type: "message.created", Entity: newUUID(t), DTO: messageCreated{DialogID: strings.TrimPrefix(ch.String(), "han:rt:dialog:"), Seq: seq}}
	r.app.record(ev) // the durable write comes first, as with an outbox
	n, err := r.pub.Publish(context.Background(), ch, ev)
	if err != nil {
		t.Fatal(err)
	}
	return ev, n
}

func (r *rig) waitGaps(t *testing.T, n int) []pubsub.Gap {
	t.Helper()
	if !redistest.WaitFor(context.Background(), 10*time.Second, func() bool { g, _ := r.app.snapshot(); return len(g) >= n }) {
		g, _ := r.app.snapshot()
		t.Fatalf("%d reconciliations, want %d (stats %+v)", len(g), n, r.sub.Stats())
	}
	g, _ := r.app.snapshot()
	return g
}

func (r *rig) waitDelivered(t *testing.T, n int) []string {
	t.Helper()
	if !redistest.WaitFor(context.Background(), 10*time.Second, func() bool { _, d := r.app.snapshot(); return len(d) >= n }) {
		_, d := r.app.snapshot()
		t.Fatalf("%d deliveries, want %d (stats %+v)", len(d), n, r.sub.Stats())
	}
	_, d := r.app.snapshot()
	return d
}

func (r *rig) numSub(t *testing.T, ch pubsub.Channel) int64 {
	t.Helper()
	m, err := r.raw.PubSubNumSub(context.Background(), ch.String()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m[ch.String()]
}

func dialog(t *testing.T) pubsub.Channel {
	t.Helper()
	c, err := pubsub.Dialog(newUUID(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The subscriber reconciles its channels once they are subscribed, then
// delivers events in order; Publish counts the receivers.
func TestSubscriberReconcilesOnSubscribeThenDelivers(t *testing.T) {
	a, b := dialog(t), dialog(t)
	u, err := pubsub.User(newUUID(t))
	if err != nil {
		t.Fatal(err)
	}
	r := startRig(t, 3, pubsub.Options{}, b, a, u)
	gaps := r.waitGaps(t, 1)
	want := []pubsub.Channel{a, b, u}
	slices.SortFunc(want, func(x, y pubsub.Channel) int { return strings.Compare(x.String(), y.String()) })
	if gaps[0].Reason != pubsub.Subscribed || !slices.Equal(gaps[0].Channels, want) {
		t.Fatalf("first gap %+v, want subscribed %v", gaps[0], want)
	}
	var ids []string
	for i := int64(0); i < 10; i++ {
		ch := []pubsub.Channel{a, b}[i%2]
		ev, n := r.publish(t, ch, i)
		if n != 1 {
			t.Fatalf("publish %d reached %d subscribers, want 1", i, n)
		}
		ids = append(ids, ev.ID)
	}
	if got := r.waitDelivered(t, 10); !slices.Equal(got, ids) {
		t.Fatalf("delivered %v, want %v in order", got, ids)
	}
	if err := r.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want the context's error", err)
	}
	if s := r.sub.Stats(); s != (pubsub.Stats{Delivered: 10, Reconciles: 1}) {
		t.Fatalf("stats %+v", s)
	}
}

// Pub/Sub loss: the subscriber's connection is killed and held down while
// events are published (no one receives them); once it is back, the reconcile
// callback runs (the REST reconciliation recovers the lost events from the
// source of truth), and later events arrive again. The lost events are never
// delivered late.
func TestSubscriberLossThenReconcile(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+protocol)), func(t *testing.T) {
			ctx := context.Background()
			ch := dialog(t)
			r := startRig(t, protocol, pubsub.Options{}, ch)
			r.waitGaps(t, 1)
			before, n := r.publish(t, ch, 1)
			if n != 1 {
				t.Fatalf("receivers %d", n)
			}
			r.waitDelivered(t, 1)

			r.gate.block()
			if err := r.raw.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
				t.Fatal(err)
			}
			if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return r.numSub(t, ch) == 0 }) {
				t.Fatal("the subscriber is still subscribed after CLIENT KILL")
			}
			var lost []string
			for i := int64(2); i <= 4; i++ {
				ev, n := r.publish(t, ch, i)
				if n != 0 {
					t.Fatalf("an event published while the subscriber was down reached %d subscribers", n)
				}
				lost = append(lost, ev.ID)
			}
			r.gate.open()

			gaps := r.waitGaps(t, 2)
			if gaps[1].Reason != pubsub.Reconnected || !slices.Equal(gaps[1].Channels, []pubsub.Channel{ch}) {
				t.Fatalf("gap after the loss: %+v", gaps[1])
			}
			if !r.app.hasApplied(lost...) {
				t.Fatal("the reconciliation did not recover the lost events")
			}
			after, n := r.publish(t, ch, 5)
			if n != 1 {
				t.Fatalf("after the reconnect an event reached %d subscribers, want 1", n)
			}
			if got := r.waitDelivered(t, 2); !slices.Equal(got, []string{before.ID, after.ID}) {
				t.Fatalf("delivered %v, want the event before the loss and the one after it", got)
			}
			_ = r.stop()
			s := r.sub.Stats()
			if s.Reconnects != 1 || s.Reconciles != 2 || s.Delivered != 2 || s.Malformed != 0 {
				t.Fatalf("stats %+v", s)
			}
			if lost := r.logs.Records(lostMsg); len(lost) != 1 || lost[0].Attrs["err"] == "" {
				t.Fatalf("connection losses logged: %+v, want the one CLIENT KILL caused", lost)
			}
			if n := promtest.Value(t, r.reg, "han_rt_pubsub_reconnects_total", nil); n != 1 {
				t.Fatalf("han_rt_pubsub_reconnects_total = %v, want 1", n)
			}
		})
	}
}

// A restart of the server: publishing fails while it is down; afterwards the
// subscriber is back, has reconciled, and receives again.
func TestSubscriberSurvivesAServerRestart(t *testing.T) {
	ch := dialog(t)
	r := startRig(t, 3, pubsub.Options{}, ch)
	r.waitGaps(t, 1)
	r.srv.Stop()
	ev := pubsub.Event{ID: newUUID(t), Type: "message.created", Entity: newUUID(t), DTO: messageCreated{Seq: 1}}
	r.app.record(ev)
	if _, err := r.pub.Publish(context.Background(), ch, ev); err == nil {
		t.Fatal("publish succeeded with the server down")
	}
	r.srv.Restart()
	gaps := r.waitGaps(t, 2)
	if gaps[len(gaps)-1].Reason != pubsub.Reconnected || !r.app.hasApplied(ev.ID) {
		t.Fatalf("after the restart: %+v", gaps)
	}
	after, n := r.publish(t, ch, 2)
	if n != 1 {
		t.Fatalf("receivers %d after the restart", n)
	}
	if got := r.waitDelivered(t, 1); !slices.Equal(got, []string{after.ID}) {
		t.Fatalf("delivered %v", got)
	}
}

// A connection that stops answering (CLIENT PAUSE) is noticed by the PING
// health check, replaced, and reconciled.
func TestSubscriberReplacesASilentConnection(t *testing.T) {
	ctx := context.Background()
	ch := dialog(t)
	r := startRig(t, 3, pubsub.Options{PingEvery: 100 * time.Millisecond}, ch)
	r.waitGaps(t, 1)
	if err := r.raw.Do(ctx, "CLIENT", "PAUSE", "700", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	gaps := r.waitGaps(t, 2)
	if gaps[1].Reason != pubsub.Reconnected {
		t.Fatalf("gap %+v", gaps[1])
	}
	ev, n := r.publish(t, ch, 1)
	if n != 1 {
		t.Fatalf("receivers %d", n)
	}
	if got := r.waitDelivered(t, 1); !slices.Equal(got, []string{ev.ID}) {
		t.Fatalf("delivered %v", got)
	}
	if s := r.sub.Stats(); s.Reconnects != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// Malformed payloads, types outside the contract and oversized payloads are
// counted and dropped; the subscriber keeps running and delivers the next
// valid event.
func TestSubscriberDropsMalformedPayloads(t *testing.T) {
	ctx := context.Background()
	ch := dialog(t)
	r := startRig(t, 3, pubsub.Options{}, ch)
	r.waitGaps(t, 1)
	bad := [][]byte{
		[]byte("SECRET-PAYLOAD"),
		{0x95, 0x01},
		make([]byte, ch.MaxBytes()+1),
		{0xdd, 0xff, 0xff, 0xff, 0xff},
	}
	// A well-formed event of a type outside the contract.
	other, err := pubsub.NewContract(pubsub.Allow[messageCreated]("message.text"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := other.Encode(pubsub.Event{ID: newUUID(t), Type: "message.text", Entity: newUUID(t), DTO: messageCreated{}}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	bad = append(bad, b)
	for _, p := range bad {
		if err := r.raw.Publish(ctx, ch.String(), p).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ev, _ := r.publish(t, ch, 1)
	if got := r.waitDelivered(t, 1); !slices.Equal(got, []string{ev.ID}) {
		t.Fatalf("delivered %v", got)
	}
	s := r.sub.Stats()
	if s.Malformed != uint64(len(bad)) || s.Delivered != 1 || s.Reconnects != 0 {
		t.Fatalf("stats %+v, want %d malformed", s, len(bad))
	}
	reports := r.logs.Records(malformedMsg)
	if len(reports) != len(bad) {
		t.Fatalf("%d malformed payloads logged, want %d", len(reports), len(bad))
	}
	for _, rec := range reports {
		if rec.Attrs["channel"] != ch.String() || !strings.Contains(rec.Attrs["err"], pubsub.ErrMalformed.Error()) || strings.Contains(rec.Line(), "SECRET-PAYLOAD") {
			t.Errorf("logged %q", rec.Line())
		}
	}
	if n := promtest.Value(t, r.reg, "han_rt_pubsub_dropped_total", map[string]string{"reason": "malformed"}); n != float64(len(bad)) {
		t.Errorf("han_rt_pubsub_dropped_total{reason=malformed} = %v, want %d", n, len(bad))
	}
}

// A reader that falls behind: events beyond the buffer are dropped and counted,
// and once the reader caught up their channel is reconciled.
func TestSubscriberOverflowIsReconciled(t *testing.T) {
	ch := dialog(t)
	r := startRig(t, 3, pubsub.Options{Buffer: 2}, ch)
	r.waitGaps(t, 1)
	var ids []string
	for i := int64(0); i < 5; i++ {
		ev, _ := r.publish(t, ch, i)
		ids = append(ids, ev.ID)
	}
	if !redistest.WaitFor(context.Background(), 5*time.Second, func() bool { return r.sub.Stats().Overflowed == 3 }) {
		t.Fatalf("stats %+v, want 3 overflowed", r.sub.Stats())
	}
	if g, _ := r.app.snapshot(); len(g) != 1 {
		t.Fatalf("reconciled %+v while the reader still lags", g)
	}
	for i := 0; i < 2; i++ {
		d := <-r.sub.Events()
		if d.Event.ID != ids[i] {
			t.Fatalf("event %d: %s, want %s", i, d.Event.ID, ids[i])
		}
	}
	gaps := r.waitGaps(t, 2)
	if gaps[1].Reason != pubsub.Overflow || !slices.Equal(gaps[1].Channels, []pubsub.Channel{ch}) || !r.app.hasApplied(ids...) {
		t.Fatalf("gap %+v", gaps[1])
	}
}

// Channels added later are reconciled once confirmed; removed ones stop
// receiving.
func TestSubscriberSubscribeAndUnsubscribe(t *testing.T) {
	ctx := context.Background()
	a, b := dialog(t), dialog(t)
	r := startRig(t, 3, pubsub.Options{}, a)
	r.waitGaps(t, 1)
	if err := r.sub.Subscribe(ctx, b); err != nil {
		t.Fatal(err)
	}
	gaps := r.waitGaps(t, 2)
	if gaps[1].Reason != pubsub.Subscribed || !slices.Equal(gaps[1].Channels, []pubsub.Channel{b}) {
		t.Fatalf("gap %+v", gaps[1])
	}
	ev, n := r.publish(t, b, 1)
	if n != 1 {
		t.Fatalf("receivers %d", n)
	}
	r.sub.Unsubscribe(ctx, a)
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return r.numSub(t, a) == 0 }) {
		t.Fatal("still subscribed to the removed channel")
	}
	if _, n := r.publish(t, a, 2); n != 0 {
		t.Fatalf("a removed channel reached %d subscribers", n)
	}
	last, _ := r.publish(t, b, 3)
	if got := r.waitDelivered(t, 2); !slices.Equal(got, []string{ev.ID, last.ID}) {
		t.Fatalf("delivered %v", got)
	}
	if err := r.sub.Subscribe(ctx, pubsub.Channel{}); err == nil {
		t.Fatal("an empty Channel was accepted")
	}
}

// Subscribe, Unsubscribe and Subscribe again of one channel, all three made
// before their confirmations are read: the channel is reconciled once the last
// SUBSCRIBE is confirmed, not at the first confirmation. An event published while
// Redis had processed the UNSUBSCRIBE but not yet the second SUBSCRIBE is then
// recovered by that reconciliation.
func TestSubscriberResubscribeReconcilesAfterTheLastSubscribe(t *testing.T) {
	ctx := context.Background()
	a, b := dialog(t), dialog(t)
	r := startRig(t, 3, pubsub.Options{}, a)
	r.waitGaps(t, 1)

	// The subscriber reads nothing for now.
	r.gate.holdReads()
	if err := r.sub.Subscribe(ctx, b); err != nil {
		t.Fatal(err)
	}
	r.sub.Unsubscribe(ctx, b)
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return r.numSub(t, b) == 0 }) {
		t.Fatal("still subscribed to b after the UNSUBSCRIBE")
	}
	// The second SUBSCRIBE is made, and held back on its way to Redis.
	r.gate.holdWrites()
	if err := r.sub.Subscribe(ctx, b); err != nil {
		t.Fatal(err)
	}
	if q := r.gate.queued.Load(); q != 1 {
		t.Fatalf("%d writes held back, want the second SUBSCRIBE", q)
	}
	// The subscriber reads the first two confirmations; an event on a, read
	// after them, shows it is done with them.
	r.gate.releaseReads()
	marker, _ := r.publish(t, a, 1)
	if got := r.waitDelivered(t, 1); !slices.Equal(got, []string{marker.ID}) {
		t.Fatalf("delivered %v", got)
	}
	if g, _ := r.app.snapshot(); len(g) != 1 {
		t.Errorf("b reconciled (%+v) before its last SUBSCRIBE reached Redis", g[1:])
	}
	lost, n := r.publish(t, b, 2)
	if n != 0 {
		t.Fatalf("an event published between UNSUBSCRIBE and SUBSCRIBE reached %d subscribers", n)
	}
	r.gate.releaseWrites()
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return r.app.hasApplied(lost.ID) }) {
		g, _ := r.app.snapshot()
		t.Fatalf("the event lost while b was unsubscribed was never reconciled (gaps %+v)", g)
	}
	gaps, _ := r.app.snapshot()
	if len(gaps) != 2 || gaps[1].Reason != pubsub.Subscribed || !slices.Equal(gaps[1].Channels, []pubsub.Channel{b}) {
		t.Fatalf("gaps %+v, want one subscribed gap of b after the first", gaps)
	}
	after, n := r.publish(t, b, 3)
	if n != 1 {
		t.Fatalf("after the resubscription an event reached %d subscribers", n)
	}
	if got := r.waitDelivered(t, 2); !slices.Equal(got, []string{marker.ID, after.ID}) {
		t.Fatalf("delivered %v", got)
	}
}

// A failing reconciliation is retried until it succeeds; events flow after it.
func TestSubscriberRetriesAFailedReconcile(t *testing.T) {
	ch := dialog(t)
	a := newApp()
	a.fail = 2 // before Run starts: its first reconciliation fails twice
	r := startRigApp(t, 3, pubsub.Options{}, a, ch)
	r.waitGaps(t, 1)
	ev, _ := r.publish(t, ch, 1)
	r.waitDelivered(t, 1)
	if s := r.sub.Stats(); s.ReconcileErrors != 2 || s.Reconciles != 1 {
		t.Fatalf("stats %+v", s)
	}
	if !r.app.hasApplied(ev.ID) {
		t.Fatal("event not applied")
	}
}

func TestNewSubscriberRefusesBadOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	rec := func(context.Context, pubsub.Gap) error { return nil }
	ct := testContract(t)
	for name, o := range map[string]pubsub.Options{
		"buffer -1":     {Buffer: -1},
		"backoff":       {MinBackoff: time.Second, MaxBackoff: time.Millisecond},
		"ping -1":       {PingEvery: -time.Second},
		"empty channel": {Channels: []pubsub.Channel{{}}},
	} {
		if _, err := pubsub.NewSubscriber(c, ct, rec, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A Registerer that refuses the collectors (another collector of the
	// same name with another description) is an error.
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "han_rt_pubsub_reconnects_total", Help: "something else"}))
	if _, err := pubsub.NewSubscriber(c, ct, rec, pubsub.Options{Registerer: reg}); err == nil {
		t.Error("a Registerer that refuses the metrics: accepted")
	}
	if _, err := pubsub.Dialog("dialog:*"); err == nil {
		t.Error("a forging dialog id was accepted")
	}
}
