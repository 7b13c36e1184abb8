package pubsub_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// fillerDTO is a DTO that fills most of a channel's 4 KiB.
type fillerDTO struct {
	Pad string `msgpack:"p"`
}

// pubsubClient is the one pubsub-type client of the server, as CLIENT LIST shows
// it: its addr and omem; ok is false when there is none.
func pubsubClient(t *testing.T, admin *redis.Client) (addr string, omem int64, ok bool) {
	t.Helper()
	list, err := admin.Do(context.Background(), "client", "list", "type", "pubsub").Text()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) > 1 {
		t.Fatalf("%d pubsub clients, want at most one:\n%s", len(lines), list)
	}
	for _, f := range strings.Fields(lines[0]) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "addr":
			addr, ok = v, true
		case "omem":
			if omem, err = strconv.ParseInt(v, 10, 64); err != nil {
				t.Fatal(err)
			}
		}
	}
	return addr, omem, ok
}

// A subscriber that stops reading (its reconciliation hangs) while events keep
// coming, on a server started from the generated vm1 config: the server-side
// output buffer of its connection grows, the sampled metric follows it, and at
// the generated client-output-buffer-limit pubsub the server disconnects it; the
// Subscriber then reconnects, counts it, reconciles every channel with reason
// Reconnected, and delivers events again.
func TestSlowSubscriberHitsTheGeneratedOutputBufferLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := spec.Instance("vm1")
	hard, _, _ := serverconf.PubSubLimits(spec, in)
	// The generated config as it is, but for the test's port, directory and an
	// aclfile of a test user allowed everything (CLIENT LIST for the sampler).
	srv := redistest.Start(t, redistest.WithACL("user default on nopass ~* &* +@all\n"),
		redistest.WithConfigFor(func(port int, dir string) []string {
			conf, err := serverconf.Render(spec, in, serverconf.Options{Bind: "127.0.0.1", Port: port, ACLFile: redistest.ACLPath(dir)})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Split(conf, "\n")
		}))
	admin := srv.Client(vm1.DB1)
	if got := admin.ConfigGet(ctx, "client-output-buffer-limit").Val()["client-output-buffer-limit"]; !strings.Contains(got, "pubsub 4194304 1048576 10") {
		t.Fatalf("the server runs with client-output-buffer-limit %q, not the generated one", got)
	}

	contract, err := pubsub.NewContract(pubsub.Allow[fillerDTO]("test.filler"))
	if err != nil {
		t.Fatal(err)
	}
	fast, _ := pubsub.Dialog(uuid.NewString())
	stalled, _ := pubsub.Dialog(uuid.NewString())
	var mu sync.Mutex
	var gaps []pubsub.Gap
	gate := make(chan struct{})
	blocked := make(chan struct{})
	reg := prometheus.NewRegistry()
	reconcile := func(ctx context.Context, g pubsub.Gap) error {
		mu.Lock()
		gaps = append(gaps, g)
		mu.Unlock()
		if g.Reason == pubsub.Subscribed && slices.Contains(g.Channels, stalled) {
			close(blocked)
			select { // a REST reconciliation that hangs: the session reads nothing meanwhile
			case <-gate:
			case <-ctx.Done():
			}
		}
		return nil
	}
	sub, err := pubsub.NewSubscriber(srv.Client(vm1.DB1), contract, reconcile, pubsub.Options{
		Channels:    []pubsub.Channel{fast},
		Registerer:  reg,
		Monitor:     admin,
		SampleEvery: 20 * time.Millisecond,
		MinBackoff:  10 * time.Millisecond,
		MaxBackoff:  100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = sub.Run(ctx) }()
	defer func() { cancel(); <-runDone }()
	var seen sync.Map
	go func() {
		for d := range sub.Events() {
			seen.Store(d.Event.ID, true)
		}
	}()
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return promtest.Value(t, reg, "han_rt_pubsub_subscribers", nil) == 1 }) {
		t.Fatal("the Subscriber did not subscribe")
	}
	addr, _, ok := pubsubClient(t, admin)
	if !ok {
		t.Fatal("no subscriber connection on the server")
	}
	if err := sub.Subscribe(ctx, stalled); err != nil {
		t.Fatal(err)
	}
	select {
	case <-blocked:
	case <-ctx.Done():
		t.Fatal("the reconciliation of the new channel never started")
	}

	pub := pubsub.NewPublisher(admin, contract)
	ev := func() pubsub.Event {
		return pubsub.Event{ID: uuid.NewString(), Type: "test.filler", Entity: uuid.NewString(), DTO: fillerDTO{Pad: strings.Repeat("x", 3900)}}
	}
	publish := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := pub.Publish(ctx, fast, ev()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Fill the buffer to between 512 KiB and the soft limit (1 MiB), and wait
	// for the sampler to report it.
	const watermark = 512 << 10
	for _, omem, _ := pubsubClient(t, admin); omem < watermark; _, omem, _ = pubsubClient(t, admin) {
		publish(16)
	}
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return promtest.Value(t, reg, "han_rt_pubsub_output_buffer_bytes", nil) >= watermark }) {
		t.Fatalf("han_rt_pubsub_output_buffer_bytes is %v, the server holds at least %d for the connection", promtest.Value(t, reg, "han_rt_pubsub_output_buffer_bytes", nil), watermark)
	}
	// Go on until the server drops the connection at the hard limit.
	published := int64(0)
	for {
		a, _, ok := pubsubClient(t, admin)
		if !ok || a != addr {
			break
		}
		if published > 16*hard {
			t.Fatalf("%d bytes published and the subscriber is still connected", published)
		}
		publish(32)
		published += 32 * 4000
	}
	if !strings.Contains(srv.Log(), "scheduled to be closed ASAP for overcoming of output buffer limits") {
		t.Fatalf("the server log does not say it closed the subscriber for its output buffer:\n%s", srv.Log())
	}

	close(gate)
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		return sub.Stats().Reconnects == 1 && promtest.Value(t, reg, "han_rt_pubsub_subscribers", nil) == 1
	}) {
		t.Fatalf("no reconnect after the disconnect: %+v", sub.Stats())
	}
	if got := promtest.Value(t, reg, "han_rt_pubsub_reconnects_total", nil); got != 1 {
		t.Fatalf("han_rt_pubsub_reconnects_total %v, want 1", got)
	}
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, g := range gaps {
			if g.Reason == pubsub.Reconnected && slices.Contains(g.Channels, fast) && slices.Contains(g.Channels, stalled) {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no reconciliation of both channels after the reconnect: %v", gaps)
	}
	after := ev()
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		if _, err := pub.Publish(ctx, fast, after); err != nil {
			t.Fatal(err)
		}
		_, ok := seen.Load(after.ID)
		return ok
	}) {
		t.Fatal("no event delivered after the reconnect")
	}
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return promtest.Value(t, reg, "han_rt_pubsub_output_buffer_bytes", nil) < 64<<10 }) {
		t.Fatalf("the sampled output buffer stays at %v after the reconnect", promtest.Value(t, reg, "han_rt_pubsub_output_buffer_bytes", nil))
	}
}

// Drops are exported by reason, exactly as the Subscriber counts them: with an
// Events buffer of one that nobody reads, 1 of 5 events is delivered and 4
// overflow, and 2 malformed payloads are dropped. Two Subscribers may share a
// Registerer: the second counts into the first one's collectors.
func TestSubscriberExportsDrops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := redistest.Start(t)
	contract, err := pubsub.NewContract(pubsub.Allow[fillerDTO]("test.filler"))
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := pubsub.Dialog(uuid.NewString())
	reg := prometheus.NewRegistry()
	reconcile := func(context.Context, pubsub.Gap) error { return nil }
	opts := pubsub.Options{Channels: []pubsub.Channel{ch}, Buffer: 1, Registerer: reg}
	if _, err := pubsub.NewSubscriber(srv.Client(vm1.DB1), contract, reconcile, opts); err != nil {
		t.Fatal(err)
	}
	sub, err := pubsub.NewSubscriber(srv.Client(vm1.DB1), contract, reconcile, opts)
	if err != nil {
		t.Fatalf("a second Subscriber on the same Registerer: %v", err)
	}
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = sub.Run(ctx) }()
	defer func() { cancel(); <-runDone }()
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return promtest.Value(t, reg, "han_rt_pubsub_subscribers", nil) == 1 }) {
		t.Fatal("the Subscriber did not subscribe")
	}
	pub := pubsub.NewPublisher(srv.Client(vm1.DB1), contract)
	for i := 0; i < 5; i++ {
		if _, err := pub.Publish(ctx, ch, pubsub.Event{ID: uuid.NewString(), Type: "test.filler", Entity: uuid.NewString(), DTO: fillerDTO{}}); err != nil {
			t.Fatal(err)
		}
	}
	raw := srv.Client(vm1.DB1)
	for _, p := range []string{"not msgpack", "\x95\x01"} {
		if err := raw.Publish(ctx, ch.String(), p).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		st := sub.Stats()
		return st.Delivered+st.Overflowed == 5 && st.Malformed == 2
	}) {
		t.Fatalf("stats %+v", sub.Stats())
	}
	st := sub.Stats()
	if st.Delivered != 1 || st.Overflowed != 4 {
		t.Fatalf("stats %+v, want 1 delivered and 4 overflowed", st)
	}
	if got := promtest.Value(t, reg, "han_rt_pubsub_dropped_total", map[string]string{"reason": "overflow"}); got != 4 {
		t.Errorf("dropped{overflow} %v, want 4", got)
	}
	if got := promtest.Value(t, reg, "han_rt_pubsub_dropped_total", map[string]string{"reason": "malformed"}); got != 2 {
		t.Errorf("dropped{malformed} %v, want 2", got)
	}
	if got := promtest.Value(t, reg, "han_rt_pubsub_reconciles_total", map[string]string{"result": "ok"}); got != 1 {
		t.Errorf("reconciles{ok} %v, want 1 (the first subscription)", got)
	}
}
