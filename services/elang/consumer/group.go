// Package consumer is the reading side of Elang's outbox stream (seed 003): queue
// workers (Worker) and WebSocket-style processes (Hub) wake on the deployment's
// bounded Redis stream as members of a consumer group (Group: XREADGROUP in bounded
// batches, XACK, XAUTOCLAIM of a dead consumer's entries), then read what the
// notifications point at from SQL, which stays the truth: a Worker claims jobs from
// elang_jobs, a Hub groups its clients by channel and cursor and runs one SQL query
// per group. Both also sweep SQL on their own (bounded), so a notification Redis lost
// delays work but never loses it. Delivery is at least once; handlers are idempotent.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/services/elang/outbox"
	"github.com/redis/go-redis/v9"
)

// ErrRedis: the stream could not be read or acknowledged.
var ErrRedis = errors.New("consumer: redis")

// Notification is one entry of the outbox stream: which committed row to read.
type Notification struct {
	// StreamID is the entry's id, what Ack takes.
	StreamID string
	// MessageID is the outbox row's message_id.
	MessageID string
	// Kind is outbox.KindEvent or outbox.KindJob.
	Kind string
	// Channel is the event channel or the job queue.
	Channel string
	// Ref is the event id within Channel or the job id.
	Ref int64
}

// Group is one consumer (consumer) of a consumer group (group) on the outbox stream
// of deployment p. Queue workers share one group, so each notification wakes one of
// them; each realtime process uses a group of its own, so each sees every
// notification. A Group is for one goroutine.
type Group struct {
	rdb             redis.UniversalClient
	stream          string
	group, consumer string
	claimFrom       string // XAUTOCLAIM cursor
}

// NewGroup names a consumer of group on p's stream; both names are 1..64 of
// [A-Za-z0-9._:-].
func NewGroup(rdb redis.UniversalClient, p elang.Prefix, group, consumer string) (*Group, error) {
	if err := outbox.CheckName("group", group); err != nil || len(group) > 64 {
		return nil, fmt.Errorf("consumer: group %q: 1..64 of [A-Za-z0-9._:-]", group)
	}
	if err := outbox.CheckName("consumer", consumer); err != nil || len(consumer) > 64 {
		return nil, fmt.Errorf("consumer: consumer %q: 1..64 of [A-Za-z0-9._:-]", consumer)
	}
	k, err := elang.NewOutboxStreamKey(p)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	return &Group{rdb: rdb, stream: k.String(), group: group, consumer: consumer, claimFrom: "0-0"}, nil
}

// Ensure creates the group at the stream's end (XGROUP CREATE ... $ MKSTREAM) unless
// it exists. Entries added before the group existed are not read: the SQL sweep of
// Worker and Hub covers them.
func (g *Group) Ensure(ctx context.Context) error {
	err := g.rdb.XGroupCreateMkStream(ctx, g.stream, g.group, "$").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("%w: create group %s: %w", ErrRedis, g.group, err)
	}
	return nil
}

// Read returns at most count new notifications for this consumer, waiting up to
// block for the first (0: no wait). A Redis that lost the group (restarted empty)
// gets it again.
func (g *Group) Read(ctx context.Context, count int, block time.Duration) ([]Notification, error) {
	args := &redis.XReadGroupArgs{Group: g.group, Consumer: g.consumer, Streams: []string{g.stream, ">"}, Count: int64(count), Block: block}
	switch {
	case block <= 0:
		args.Block = -1 // go-redis: no BLOCK argument
	case block < time.Millisecond:
		args.Block = time.Millisecond // BLOCK 0 would wait forever
	}
	res, err := g.rdb.XReadGroup(ctx, args).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOGROUP") {
		if err := g.Ensure(ctx); err != nil {
			return nil, err
		}
		res, err = g.rdb.XReadGroup(ctx, args).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read group %s: %w", ErrRedis, g.group, err)
	}
	var out []Notification
	for _, s := range res {
		out = append(out, decode(s.Messages)...)
	}
	return out, nil
}

// Ack acknowledges handled notifications.
func (g *Group) Ack(ctx context.Context, ns []Notification) error {
	if len(ns) == 0 {
		return nil
	}
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = n.StreamID
	}
	if err := g.rdb.XAck(ctx, g.stream, g.group, ids...).Err(); err != nil {
		return fmt.Errorf("%w: ack %d in group %s: %w", ErrRedis, len(ids), g.group, err)
	}
	return nil
}

// Reclaim takes over at most count notifications another consumer of the group
// read and did not acknowledge for minIdle (it died), with XAUTOCLAIM; successive
// calls walk the pending list and start over at its end.
func (g *Group) Reclaim(ctx context.Context, minIdle time.Duration, count int) ([]Notification, error) {
	msgs, next, err := g.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: g.stream, Group: g.group, Consumer: g.consumer, MinIdle: minIdle, Start: g.claimFrom, Count: int64(count),
	}).Result()
	if err != nil {
		if strings.HasPrefix(err.Error(), "NOGROUP") {
			return nil, g.Ensure(ctx)
		}
		return nil, fmt.Errorf("%w: reclaim in group %s: %w", ErrRedis, g.group, err)
	}
	g.claimFrom = next
	return decode(msgs), nil
}

func decode(msgs []redis.XMessage) []Notification {
	out := make([]Notification, 0, len(msgs))
	for _, m := range msgs {
		n := Notification{StreamID: m.ID}
		n.MessageID, _ = m.Values["message_id"].(string)
		n.Kind, _ = m.Values["kind"].(string)
		n.Channel, _ = m.Values["channel"].(string)
		if s, ok := m.Values["ref"].(string); ok {
			n.Ref, _ = strconv.ParseInt(s, 10, 64)
		}
		out = append(out, n)
	}
	return out
}

// pause waits d, or less if ctx ends first: the wait after a failed step.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
