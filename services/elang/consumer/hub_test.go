package consumer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/services/elang/outbox"
	"github.com/prometheus/client_golang/prometheus"
)

// client records what a hub delivered to one subscription.
type client struct {
	got  []int64
	gaps int
}

func (c *client) deliver(d Delivery) {
	if d.Gap {
		c.gaps++
	}
	for _, e := range d.Events {
		c.got = append(c.got, e.ID)
	}
}

// want checks c got exactly events from+1..to, in order.
func (c *client) want(t *testing.T, name string, from, to int64) {
	t.Helper()
	if int64(len(c.got)) != to-from {
		t.Fatalf("%s got %d events %v, want %d..%d", name, len(c.got), c.got, from+1, to)
	}
	if c.gaps != 0 {
		t.Fatalf("%s was told %d times to reload its snapshot", name, c.gaps)
	}
	for i, id := range c.got {
		if id != from+1+int64(i) {
			t.Fatalf("%s got %v, want %d..%d in order", name, c.got, from+1, to)
		}
	}
}

// 60 clients in 3 groups (channel, cursor) cost 3 SQL queries for one wake-up;
// each client gets exactly the events after its cursor, in order; once their
// cursors meet, the clients of a channel are one group.
func TestHubOneQueryPerChannelAndCursor(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	h := NewHub(e.db, e.group(t, "realtime:p1", "hub"), HubOptions{Block: time.Millisecond, Registerer: reg})
	e.publish(t, "room:a", 5) // before the clients connect: the late ones have seen them
	subscribe := func(ch string, cursor int64) *client {
		c := &client{}
		if _, err := h.Subscribe(ch, cursor, c.deliver); err != nil {
			t.Fatal(err)
		}
		return c
	}
	var aFresh, aLate, b []*client
	for i := 0; i < 20; i++ {
		aFresh = append(aFresh, subscribe("room:a", 0))
		aLate = append(aLate, subscribe("room:a", 5))
		b = append(b, subscribe("room:b", 0))
	}
	e.publish(t, "room:a", 7)
	e.publish(t, "room:b", 4)
	e.drain(t)
	if err := h.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if q := promtest.Value(t, reg, "elang_realtime_queries_total", nil); q != 3 {
		t.Fatalf("%v SQL queries, want 3 (room:a after 0, room:a after 5, room:b after 0)", q)
	}
	for i := range aFresh {
		aFresh[i].want(t, fmt.Sprintf("fresh client %d of room:a", i), 0, 12)
		aLate[i].want(t, fmt.Sprintf("late client %d of room:a", i), 5, 12)
		b[i].want(t, fmt.Sprintf("client %d of room:b", i), 0, 4)
	}
	e.publish(t, "room:a", 1)
	e.drain(t)
	if err := h.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if q := promtest.Value(t, reg, "elang_realtime_queries_total", nil); q != 4 {
		t.Fatalf("%v SQL queries after one more event of room:a, want 4", q)
	}
	if got := aLate[3].got; len(got) != 8 || got[7] != 13 {
		t.Fatalf("late client 3 has %v, want 6..13", got)
	}
	if d := promtest.Value(t, reg, "elang_realtime_delivered_total", nil); d != 20*12+20*7+20*4+40 {
		t.Fatalf("%v events delivered, want %d", d, 20*12+20*7+20*4+40)
	}
	p, err := e.srv.Admin().XPending(ctx, e.prefix.String()+"outbox:stream", "realtime:p1").Result()
	if err != nil || p.Count != 0 {
		t.Fatalf("pending after the steps: %+v %v, want none", p, err)
	}
}

// Notifications Redis lost (the stream deleted after the relay marked its rows)
// reach nobody through the stream; the bounded sweep, one channel a pass here,
// brings every client up to date anyway, a page at a time.
func TestHubSweepRecoversLostNotifications(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := NewHub(e.db, e.group(t, "realtime:p2", "hub"), HubOptions{Block: time.Millisecond, Page: 10, SweepChannels: 1})
	a, b := &client{}, &client{}
	if _, err := h.Subscribe("room:a", 0, a.deliver); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Subscribe("room:b", 0, b.deliver); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "room:a", 25)
	e.publish(t, "room:b", 3)
	e.drain(t)
	if err := e.srv.Admin().Del(ctx, e.prefix.String()+"outbox:stream").Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if len(a.got)+len(b.got) != 0 {
		t.Fatalf("delivered %d+%d events without notifications", len(a.got), len(b.got))
	}
	if err := h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	a.want(t, "room:a after the first sweep", 0, 25)
	if len(b.got) != 0 {
		t.Fatalf("the first sweep, bounded to one channel, also served room:b: %v", b.got)
	}
	if err := h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	b.want(t, "room:b after the second sweep", 0, 3)
	a.want(t, "room:a after the second sweep", 0, 25)
}

// A client whose cursor lies before the history operations:prune removed gets what
// is left, told to reload its snapshot (Gap); a client within the history is not.
func TestHubTellsAClientBehindPrunedHistoryToReload(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := NewHub(e.db, e.group(t, "realtime:p3", "hub"), HubOptions{Block: time.Millisecond})
	e.publish(t, "room:a", 10)
	e.publish(t, "room:b", 4)
	e.drain(t)
	if _, err := e.db.Exec(ctx, "UPDATE elang_events SET created_at = now() - interval '30 days' WHERE id <= 6"); err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.Prune(ctx, e.db, outbox.Retention{}, nil); err != nil {
		t.Fatal(err)
	}
	away, recent, gone := &client{}, &client{}, &client{}
	for _, s := range []struct {
		ch     string
		cursor int64
		c      *client
	}{{"room:a", 2, away}, {"room:a", 6, recent}, {"room:b", 1, gone}} {
		if _, err := h.Subscribe(s.ch, s.cursor, s.c.deliver); err != nil {
			t.Fatal(err)
		}
	}
	e.publish(t, "room:a", 1)
	e.drain(t)
	if err := h.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if away.gaps != 1 || len(away.got) != 5 || away.got[0] != 7 {
		t.Fatalf("client away since event 2: %d gaps, events %v; want one gap and 7..11", away.gaps, away.got)
	}
	recent.want(t, "client at event 6", 6, 11)
	// room:b had no new event: the sweep finds its last id 4 and nothing left after 1.
	if err := h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if gone.gaps != 1 || len(gone.got) != 0 {
		t.Fatalf("client of room:b: %d gaps, events %v; want one gap and nothing", gone.gaps, gone.got)
	}
}

// A hub process that read notifications and died before acknowledging them leaves
// them pending in its group; the hub started again under the same group takes them
// over in its sweep and acknowledges them, so its pending list does not grow.
func TestHubSweepClearsItsGroupsStaleNotifications(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	before := e.group(t, "realtime:p4", "hub")
	e.publish(t, "room:a", 12)
	e.drain(t)
	if got, err := before.Read(ctx, 100, 0); err != nil || len(got) != 12 {
		t.Fatalf("the first process read %d notifications (%v), want 12", len(got), err)
	}
	h := NewHub(e.db, e.group(t, "realtime:p4", "hub"), HubOptions{Block: time.Millisecond, SweepEvery: time.Millisecond, Batch: 5})
	pending := func() int64 {
		p, err := e.srv.Admin().XPending(ctx, e.prefix.String()+"outbox:stream", "realtime:p4").Result()
		if err != nil {
			t.Fatal(err)
		}
		return p.Count
	}
	if n := pending(); n != 12 {
		t.Fatalf("%d pending before the sweeps, want 12", n)
	}
	waitFor(t, 10*time.Second, "the stale notifications acknowledged", func() bool {
		if err := h.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		return pending() == 0
	})
}

// A hub reads bounded batches (seed 003: "WebSocket processes read bounded
// batches of Redis notifications"): with Batch 5 and 12 notifications waiting,
// each Step takes at most 5 (XREADGROUP COUNT), so the first two Steps reach 5
// channels each and the third the last 2, and the group is 7, then 2, then 0
// entries behind. Without COUNT one Step would take all 12.
func TestHubReadsBoundedBatches(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const channels, batch = 12, 5
	h := NewHub(e.db, e.group(t, "realtime:p5", "hub"), HubOptions{Block: time.Millisecond, Batch: batch})
	clients := make([]*client, channels)
	for i := range clients {
		clients[i] = &client{}
		if _, err := h.Subscribe(fmt.Sprintf("room:%d", i), 0, clients[i].deliver); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < channels; i++ {
		e.publish(t, fmt.Sprintf("room:%d", i), 1)
	}
	e.drain(t)
	for step, want := range []struct{ reached, lag int64 }{{5, 7}, {10, 2}, {12, 0}} {
		if err := h.Step(ctx); err != nil {
			t.Fatal(err)
		}
		var reached int64
		for _, c := range clients {
			reached += int64(len(c.got))
		}
		groups, err := e.srv.Admin().XInfoGroups(ctx, e.prefix.String()+"outbox:stream").Result()
		if err != nil || len(groups) != 1 {
			t.Fatalf("XINFO GROUPS: %+v %v", groups, err)
		}
		if reached != want.reached || groups[0].Lag != want.lag || groups[0].EntriesRead != want.reached {
			t.Fatalf("after step %d: %d channels reached, the group read %d and is %d behind; want %d read and %d behind (batches of %d)",
				step+1, reached, groups[0].EntriesRead, groups[0].Lag, want.reached, want.lag, batch)
		}
	}
}
