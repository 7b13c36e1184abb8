// Package outbox is Elang's durable SQL outbox (seed 003): Queue.Push and
// Events.Publish write a job or an event together with an outbox row through the
// application's own pgx.Tx, so a rollback leaves nothing; a Relay, in transactions
// of its own, reads only committed outbox rows and publishes a wake-up notification
// of each into the deployment's bounded Redis stream (generated/elang key
// outbox_stream) through the outbox_relay script, whose dedupe key (seven days)
// keeps a retry from appending twice; Prune removes delivered rows and history past
// retention, never an unpublished row.
//
// Delivery is at least once: consumers (package consumer) stay idempotent, and SQL
// stays the truth they read from. Event ids increase monotonically within a channel:
// Publish allocates them under the channel's row lock, held until the business
// transaction ends, so commit order and id order agree; ids of different channels
// are never compared.
package outbox

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migration creates the service tables (elang_event_channels, elang_events,
// elang_jobs, elang_outbox) and their indexes; idempotent (IF NOT EXISTS), so
// platform:setup runs it on every deploy.
//
//go:embed migrations/001_outbox.sql
var Migration string

// MaxPayload bounds an event's or a job's payload (bytes).
const MaxPayload = 64 << 10

// MaxNameLen bounds a channel or queue name (bytes); it travels in every stream entry.
const MaxNameLen = 128

// Kinds of outbox rows, as stored in elang_outbox.kind and in the stream's kind field.
const (
	KindEvent = "event"
	KindJob   = "job"
)

// ErrInvalid: a channel or queue name or a payload that breaks the rules; nothing was written.
var ErrInvalid = errors.New("outbox: invalid input")

// Setup runs Migration on db (platform:setup).
func Setup(ctx context.Context, db *pgxpool.Pool) error {
	if _, err := db.Exec(ctx, Migration); err != nil {
		return fmt.Errorf("outbox: setup: %w", err)
	}
	return nil
}

// CheckName reports whether s may name a channel or a queue: 1..MaxNameLen bytes of
// [A-Za-z0-9._:-] ("report:42", "orders.eu-1").
func CheckName(what, s string) error {
	if len(s) == 0 || len(s) > MaxNameLen {
		return fmt.Errorf("%w: %s name: %d bytes, want 1..%d", ErrInvalid, what, len(s), MaxNameLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Errorf("%w: %s name: byte %d (%q) is not one of [A-Za-z0-9._:-]", ErrInvalid, what, i+1, c)
		}
	}
	return nil
}

func checkPayload(what string, p []byte) error {
	if len(p) > MaxPayload {
		return fmt.Errorf("%w: %s payload: %d bytes, at most %d", ErrInvalid, what, len(p), MaxPayload)
	}
	return nil
}

// Events publishes realtime events: each is a row of the channel's replay history
// (elang_events) and an outbox row, both in the caller's transaction.
type Events struct{}

// Event is a published event's place in its channel.
type Event struct {
	Channel string
	// ID is the event's id in Channel: one more than the channel's previous event
	// committed before it. Ids of different channels are not comparable.
	ID int64
}

// publishSQL allocates the channel's next id under its row lock (the upsert takes
// it and the transaction keeps it until commit or rollback), then writes the history
// row and the outbox row. The outbox id (a sequence) is drawn after the lock, so
// within a channel outbox order is id order is commit order.
const publishSQL = `
WITH c AS (
    INSERT INTO elang_event_channels AS c (name, last_id) VALUES ($1, 1)
    ON CONFLICT (name) DO UPDATE SET last_id = c.last_id + 1
    RETURNING last_id
), e AS (
    INSERT INTO elang_events (channel, id, payload) SELECT $1, last_id, $2 FROM c RETURNING id
), o AS (
    INSERT INTO elang_outbox (kind, channel, ref) SELECT 'event', $1, id FROM e
)
SELECT id FROM e`

// Publish appends payload to channel inside tx, the transaction of the write it
// announces. The channel's row stays locked until tx ends: another transaction
// publishing to the same channel waits, so keep such transactions short. A rollback
// publishes nothing.
func (Events) Publish(ctx context.Context, tx pgx.Tx, channel string, payload []byte) (Event, error) {
	if err := CheckName("channel", channel); err != nil {
		return Event{}, err
	}
	if err := checkPayload("event", payload); err != nil {
		return Event{}, err
	}
	if payload == nil {
		payload = []byte{}
	}
	var id int64
	if err := tx.QueryRow(ctx, publishSQL, channel, payload).Scan(&id); err != nil {
		return Event{}, fmt.Errorf("outbox: publish to %s: %w", channel, err)
	}
	return Event{Channel: channel, ID: id}, nil
}

// Queue pushes jobs: each is a row of elang_jobs and an outbox row, both in the
// caller's transaction.
type Queue struct{}

const pushSQL = `
WITH j AS (
    INSERT INTO elang_jobs (queue, payload) VALUES ($1, $2) RETURNING id
), o AS (
    INSERT INTO elang_outbox (kind, channel, ref) SELECT 'job', $1, id FROM j
)
SELECT id FROM j`

// Push adds a job to queue inside tx and returns its id. A rollback leaves neither
// the job nor its notification.
func (Queue) Push(ctx context.Context, tx pgx.Tx, queue string, payload []byte) (int64, error) {
	if err := CheckName("queue", queue); err != nil {
		return 0, err
	}
	if err := checkPayload("job", payload); err != nil {
		return 0, err
	}
	if payload == nil {
		payload = []byte{}
	}
	var id int64
	if err := tx.QueryRow(ctx, pushSQL, queue, payload).Scan(&id); err != nil {
		return 0, fmt.Errorf("outbox: push to %s: %w", queue, err)
	}
	return id, nil
}
