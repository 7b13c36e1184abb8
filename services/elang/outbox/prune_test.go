package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Prune removes delivered rows, history and finished jobs past retention in bounded
// batches, and never a pending row, the history of a pending event, an unfinished
// job or a channel's last id.
func TestPruneKeepsWhatIsPending(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, "old", 25)
	if _, err := e.relay(Options{Batch: 100}).Drain(ctx, nil); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "old", 5) // pending: never delivered
	e.tx(t, false, func(tx pgx.Tx) error {
		for i := 0; i < 4; i++ {
			if _, err := (Queue{}).Push(ctx, tx, "mail", nil); err != nil {
				return err
			}
		}
		return nil
	})
	// Age everything by ten days; two of the four jobs are finished.
	for _, q := range []string{
		"UPDATE elang_outbox SET created_at = created_at - interval '10 days', delivered_at = delivered_at - interval '10 days'",
		"UPDATE elang_events SET created_at = created_at - interval '10 days'",
		"UPDATE elang_jobs SET state = 'done', finished_at = now() - interval '10 days' WHERE id IN (SELECT id FROM elang_jobs ORDER BY id LIMIT 2)",
	} {
		if _, err := e.db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var batches int
	got, err := Prune(ctx, e.db, Retention{Batch: 10}, func(Pruned) { batches++ })
	if err != nil {
		t.Fatal(err)
	}
	if got != (Pruned{Outbox: 25, Events: 25, Jobs: 2}) || batches != 3+3+1 {
		t.Fatalf("pruned %+v in %d batches, want 25 outbox rows, 25 events, 2 jobs in 7 batches of at most 10", got, batches)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL"); n != 9 {
		t.Fatalf("%d pending rows left, want 9 (5 events, 4 jobs)", n)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_events"); n != 5 {
		t.Fatalf("%d events left, want the 5 pending ones", n)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_jobs WHERE state <> 'done'"); n != 2 {
		t.Fatalf("%d unfinished jobs left, want 2", n)
	}
	if n := e.count(t, "SELECT last_id FROM elang_event_channels WHERE name = 'old'"); n != 30 {
		t.Fatalf("channel last id %d, want 30", n)
	}
	// Within retention nothing goes.
	if again, err := Prune(ctx, e.db, Retention{Delivered: 30 * 24 * time.Hour, History: 30 * 24 * time.Hour, Jobs: 30 * 24 * time.Hour}, nil); err != nil || again != (Pruned{}) {
		t.Fatalf("second prune: %+v %v, want nothing", again, err)
	}
}
