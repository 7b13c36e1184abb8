package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/services/elang/outbox"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Event is one event of a channel's replay history.
type Event struct {
	Channel string
	ID      int64
	Payload []byte
}

// Delivery is what a subscription receives: the next events of its channel in id
// order, and whether history it had not seen was pruned before it could be read.
type Delivery struct {
	// Events follow the subscription's cursor in id order (none when Gap says
	// everything up to the channel's last id is gone).
	Events []Event
	// Gap: events after the cursor and before Events were pruned (operations:prune)
	// before this client read them; it must reload its application snapshot. Ids of
	// a channel have no holes (a rollback takes its id back), so a hole is a prune.
	Gap bool
}

// HubOptions configure a Hub. The zero value takes every default.
type HubOptions struct {
	// Batch bounds the notifications read at once (default 100).
	Batch int
	// Block is how long a step waits on the stream (default 1s).
	Block time.Duration
	// Page bounds the events one SQL query returns (default 100); a group further
	// behind gets further queries.
	Page int
	// SweepChannels bounds the channels one Sweep looks at (default 1000); the next
	// sweep goes on where it stopped.
	SweepChannels int
	// SweepEvery is how often Work sweeps (default 5s).
	SweepEvery time.Duration
	// Registerer receives the hub's metrics (nil: none). Hubs of one process on
	// the same Registerer share them.
	Registerer prometheus.Registerer
	// Logger (nil: slog.Default()).
	Logger *slog.Logger
}

// Hub is the realtime side of a WebSocket-style process: its clients subscribe to a
// channel from a cursor (the last event id they have), and the Hub delivers every
// later event in id order, reading SQL once per group of clients that share a
// channel and a cursor. Steps and sweeps run on one goroutine (Work); Subscribe and
// Close may be called from any.
type Hub struct {
	db *pgxpool.Pool
	g  *Group
	o  HubOptions

	mu        sync.Mutex
	subs      map[string]map[*Subscription]struct{} // channel -> subscriptions
	sweepFrom string                                // the last channel the previous sweep looked at

	queries   prometheus.Counter
	delivered prometheus.Counter
}

// Subscription is one client's interest in one channel.
type Subscription struct {
	h       *Hub
	channel string
	cursor  int64 // the last event id delivered; only the hub's goroutine moves it
	deliver func(Delivery)
}

// NewHub makes a hub reading db's history, woken through g (a group of this process
// alone, so it sees every notification).
func NewHub(db *pgxpool.Pool, g *Group, o HubOptions) *Hub {
	if o.Batch <= 0 {
		o.Batch = 100
	}
	if o.Block <= 0 {
		o.Block = time.Second
	}
	if o.Page <= 0 {
		o.Page = 100
	}
	if o.SweepChannels <= 0 {
		o.SweepChannels = 1000
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	set := promreg.On(o.Registerer)
	h := &Hub{db: db, g: g, o: o, subs: map[string]map[*Subscription]struct{}{},
		queries:   set.Counter("elang_realtime_queries_total", "SQL queries of the replay history, one per group of clients sharing a channel and a cursor."),
		delivered: set.Counter("elang_realtime_delivered_total", "Events delivered to clients."),
	}
	set.LogErr(o.Logger, "consumer: hub")
	return h
}

// Subscribe delivers channel's events after cursor to deliver, in id order, from
// the next step or sweep on. deliver runs on the hub's goroutine: it must not block
// (hand the events to the client's writer). A client whose cursor is older than the
// history kept (operations:prune) gets what is left and must reload its snapshot.
func (h *Hub) Subscribe(channel string, cursor int64, deliver func(Delivery)) (*Subscription, error) {
	if err := outbox.CheckName("channel", channel); err != nil {
		return nil, err
	}
	s := &Subscription{h: h, channel: channel, cursor: cursor, deliver: deliver}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[channel] == nil {
		h.subs[channel] = map[*Subscription]struct{}{}
	}
	h.subs[channel][s] = struct{}{}
	return s, nil
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	delete(s.h.subs[s.channel], s)
	if len(s.h.subs[s.channel]) == 0 {
		delete(s.h.subs, s.channel)
	}
}

// Work steps until ctx ends, sweeping every SweepEvery; then it returns nil.
func (h *Hub) Work(ctx context.Context) error {
	if err := h.g.Ensure(ctx); err != nil && ctx.Err() == nil {
		h.o.Logger.Warn("realtime hub: consumer group not created yet; sweeps go on", "err", err)
	}
	last := time.Now()
	for ctx.Err() == nil {
		if err := h.Step(ctx); err != nil && ctx.Err() == nil {
			h.o.Logger.Warn("realtime hub step failed", "err", err)
			pause(ctx, h.o.Block)
		}
		if time.Since(last) >= h.o.SweepEvery {
			if err := h.Sweep(ctx); err != nil && ctx.Err() == nil {
				h.o.Logger.Warn("realtime hub sweep failed", "err", err)
			}
			last = time.Now()
		}
	}
	return nil
}

// Step waits (at most Block) for a batch of notifications, delivers the new events
// of the channels they name to their subscribers, and acknowledges them.
func (h *Hub) Step(ctx context.Context) error {
	notes, err := h.g.Read(ctx, h.o.Batch, h.o.Block)
	if err != nil {
		return err
	}
	var channels []string
	for _, n := range notes {
		if n.Kind == outbox.KindEvent && !slices.Contains(channels, n.Channel) {
			channels = append(channels, n.Channel)
		}
	}
	for _, ch := range channels {
		if err := h.catchUp(ctx, ch, -1); err != nil {
			return err
		}
	}
	return h.g.Ack(ctx, notes)
}

// Sweep is the reconcile pass for notifications Redis lost: one SQL query reads the
// last id of at most SweepChannels subscribed channels (in name order, going on
// after the previous sweep's last), and every group behind it catches up. It also
// takes over (XAUTOCLAIM) at most Batch notifications left unacknowledged for
// SweepEvery in the hub's group, e.g. by this process before a restart, and
// acknowledges them: the sweeps cover what they announced.
func (h *Hub) Sweep(ctx context.Context) error {
	stale, err := h.g.Reclaim(ctx, h.o.SweepEvery, h.o.Batch)
	if err != nil {
		h.o.Logger.Warn("realtime hub: reclaiming stale notifications failed; the sweep goes on", "err", err)
	}
	if err := h.sweep(ctx); err != nil {
		return err
	}
	return h.g.Ack(ctx, stale)
}

func (h *Hub) sweep(ctx context.Context) error {
	h.mu.Lock()
	names := make([]string, 0, len(h.subs))
	for ch := range h.subs {
		names = append(names, ch)
	}
	from := h.sweepFrom
	h.mu.Unlock()
	slices.Sort(names)
	i, _ := slices.BinarySearch(names, from)
	if i < len(names) && names[i] == from {
		i++
	}
	names = append(names[i:], names[:i]...)
	if len(names) > h.o.SweepChannels {
		names = names[:h.o.SweepChannels]
	}
	if len(names) == 0 {
		return nil
	}
	h.mu.Lock()
	h.sweepFrom = names[len(names)-1]
	h.mu.Unlock()
	rows, err := h.db.Query(ctx, `SELECT name, last_id FROM elang_event_channels WHERE name = ANY($1)`, names)
	if err != nil {
		return fmt.Errorf("consumer: sweep: %w", err)
	}
	last := map[string]int64{}
	for rows.Next() {
		var n string
		var id int64
		if err := rows.Scan(&n, &id); err != nil {
			rows.Close()
			return fmt.Errorf("consumer: sweep: %w", err)
		}
		last[n] = id
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("consumer: sweep: %w", err)
	}
	for _, ch := range names {
		if id, ok := last[ch]; ok {
			if err := h.catchUp(ctx, ch, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// catchUp delivers channel's events to every subscription behind upTo (-1: behind
// anything), one SQL query per group of subscriptions with one cursor, a page at a
// time, until every group has what SQL holds.
func (h *Hub) catchUp(ctx context.Context, channel string, upTo int64) error {
	var behind []*Subscription
	h.mu.Lock()
	for s := range h.subs[channel] {
		if upTo < 0 || s.cursor < upTo {
			behind = append(behind, s)
		}
	}
	h.mu.Unlock()
	for len(behind) > 0 {
		groups := map[int64][]*Subscription{}
		for _, s := range behind {
			groups[s.cursor] = append(groups[s.cursor], s)
		}
		var next []*Subscription // groups that got a full page: there may be more
		for cursor, subs := range groups {
			evs, err := h.page(ctx, channel, cursor)
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				if upTo > cursor { // the sweep knows of events up to upTo: all pruned
					for _, s := range subs {
						s.deliver(Delivery{Gap: true})
						s.cursor = upTo
					}
				}
				continue
			}
			d := Delivery{Events: evs, Gap: evs[0].ID != cursor+1}
			for _, s := range subs {
				s.deliver(d)
				s.cursor = evs[len(evs)-1].ID
				h.delivered.Add(float64(len(evs)))
			}
			if len(evs) == h.o.Page {
				next = append(next, subs...)
			}
		}
		behind = next
	}
	return nil
}

func (h *Hub) page(ctx context.Context, channel string, cursor int64) ([]Event, error) {
	h.queries.Inc()
	rows, err := h.db.Query(ctx, `SELECT id, payload FROM elang_events WHERE channel = $1 AND id > $2 ORDER BY id LIMIT $3`, channel, cursor, h.o.Page)
	if err != nil {
		return nil, fmt.Errorf("consumer: read %s after %d: %w", channel, cursor, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e := Event{Channel: channel}
		if err := rows.Scan(&e.ID, &e.Payload); err != nil {
			return nil, fmt.Errorf("consumer: read %s: %w", channel, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
