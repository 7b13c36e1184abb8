package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Retention says how long Prune keeps what it may remove.
type Retention struct {
	// Delivered: outbox rows delivered longer ago than this go (default 7 days, the
	// dedupe key's lifetime, so a row's dedupe key is gone before the row is).
	Delivered time.Duration
	// History: events older than this leave the replay history (default 7 days);
	// a client that reconnects later must reload its snapshot. An event whose
	// outbox row is still pending is kept.
	History time.Duration
	// Jobs: finished jobs older than this go (default 7 days).
	Jobs time.Duration
	// Batch bounds each DELETE (default 1000 rows), so no pass holds locks long.
	Batch int
}

// Pruned counts what Prune removed.
type Pruned struct {
	Outbox, Events, Jobs int64
}

// Prune removes, in bounded batches each a transaction of its own, delivered outbox
// rows, history events and finished jobs past their retention (operations:prune).
// It never removes an unpublished outbox row, an event whose notification is still
// pending, a job not finished, or a channel's last-id row (ids stay monotonic).
// progress, if set, is called after every batch with the running totals.
func Prune(ctx context.Context, db *pgxpool.Pool, r Retention, progress func(Pruned)) (Pruned, error) {
	for _, age := range []*time.Duration{&r.Delivered, &r.History, &r.Jobs} {
		if *age <= 0 {
			*age = 7 * 24 * time.Hour // every retention's default
		}
	}
	if r.Batch <= 0 {
		r.Batch = 1000
	}
	var out Pruned
	steps := []struct {
		what  string
		sql   string
		age   time.Duration
		count *int64
	}{
		{"delivered outbox rows", `DELETE FROM elang_outbox WHERE id IN (
			SELECT id FROM elang_outbox WHERE delivered_at < now() - $1::interval ORDER BY delivered_at LIMIT $2)`, r.Delivered, &out.Outbox},
		{"history events", `DELETE FROM elang_events WHERE (channel, id) IN (
			SELECT e.channel, e.id FROM elang_events e WHERE e.created_at < now() - $1::interval
			AND NOT EXISTS (SELECT 1 FROM elang_outbox o WHERE o.delivered_at IS NULL AND o.kind = 'event' AND o.channel = e.channel AND o.ref = e.id)
			ORDER BY e.created_at LIMIT $2)`, r.History, &out.Events},
		{"finished jobs", `DELETE FROM elang_jobs WHERE id IN (
			SELECT id FROM elang_jobs WHERE state = 'done' AND finished_at < now() - $1::interval ORDER BY finished_at LIMIT $2)`, r.Jobs, &out.Jobs},
	}
	for _, s := range steps {
		for {
			tag, err := db.Exec(ctx, s.sql, s.age, r.Batch)
			if err != nil {
				return out, fmt.Errorf("outbox: prune %s: %w", s.what, err)
			}
			*s.count += tag.RowsAffected()
			if progress != nil && tag.RowsAffected() > 0 {
				progress(out)
			}
			if tag.RowsAffected() < int64(r.Batch) {
				break
			}
		}
	}
	return out, nil
}
