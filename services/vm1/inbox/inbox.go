// Package inbox is api-backend's internal inbox (seed 000 §10): the endpoint
// through which internal services (bitrix-sync, ...) deliver items for users.
//
// An item is acknowledged only once its durable receipt is committed in
// PostgreSQL (table inbox_receipts, from Migration), so a Redis outage never
// loses one: Redis only rate-limits the senders (route internal.inbox, a token
// bucket per service, through package ratelimit, whose degraded mode for the
// route decides while Redis cannot answer) and, after the commit, carries an
// at-most-once realtime notification to the recipient, whose client reconciles
// through REST. A sender retries until it gets a Receipt; a retry of a committed
// item (same service and delivery id) is answered from its row as a duplicate,
// and one with other content is a conflict.
package inbox

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Migration is the SQL that creates inbox_receipts and its index (idempotent:
// CREATE ... IF NOT EXISTS). Inbox.Migrate runs it.
//
//go:embed migrations/001_inbox_receipts.sql
var Migration string

// MaxPayload bounds an item's payload.
const MaxPayload = 64 << 10

// DefaultPublishTimeout bounds the notification of a delivery.
const DefaultPublishTimeout = 100 * time.Millisecond

// Sentinel errors, matched with errors.Is. None of them acknowledges the item:
// the sender keeps it and retries.
var (
	// ErrInvalidItem: an item that breaks the rules (a field is missing, malformed or too long).
	ErrInvalidItem = errors.New("inbox: invalid item")
	// ErrRateLimited: the sender is over its limit; retry after RateLimitedError.RetryAfter.
	ErrRateLimited = errors.New("inbox: sender rate-limited")
	// ErrUnavailable: the rate limiter cannot decide (Redis down on a fail-closed
	// route) or PostgreSQL cannot store the receipt: answer 503, the sender retries.
	ErrUnavailable = errors.New("inbox: unavailable")
	// ErrConflict: the delivery id was received before with other content.
	ErrConflict = errors.New("inbox: delivery id reused with other content")
)

// RateLimitedError is ErrRateLimited with the exact wait.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("inbox: sender rate-limited: retry after %s", e.RetryAfter)
}

// Is matches ErrRateLimited.
func (e *RateLimitedError) Is(target error) bool { return target == ErrRateLimited }

// Item is one delivery.
type Item struct {
	// Service is the authenticated sender ([A-Za-z0-9._-], 1..32).
	Service string
	// DeliveryID is the sender's UUID for the item; a retry reuses it.
	DeliveryID string
	// Kind is the item's type, 1..64 characters of [a-z0-9._-].
	Kind string
	// RecipientID is the user the item is for (a UUID).
	RecipientID string
	// Payload is the sanitized item, at most MaxPayload bytes. It is stored in
	// PostgreSQL only, never in Redis or a notification.
	Payload []byte
}

// Receipt acknowledges an item: its row is committed.
type Receipt struct {
	ID         int64
	ReceivedAt time.Time
	// Duplicate: the item had been received before (a sender's retry).
	Duplicate bool
	// Degraded: the rate limit was decided without Redis (its degraded mode).
	Degraded bool
	// Notified: the recipient's realtime channel got the notification.
	Notified bool
}

// Limiter is what the inbox needs of a rate limiter; *ratelimit.Limiter is one.
type Limiter interface {
	Allow(ctx context.Context, s ratelimit.Subject, route vm1.APIRoute) (ratelimit.Decision, error)
}

// Received is the DTO of the realtime event EventReceived: the sender and the
// item's kind; the item itself is fetched through the API.
type Received struct {
	Service string `msgpack:"s"`
	Kind    string `msgpack:"k"`
}

// EventReceived is the realtime event "inbox.received", published on the
// recipient's han:rt:user channel; add it to the realtime Contract.
var EventReceived = pubsub.Allow[Received]("inbox.received")

// Options configure an Inbox. Zero fields take the defaults.
type Options struct {
	// Publisher, when set, notifies the recipient after each new receipt; its
	// Contract must allow EventReceived.
	Publisher *pubsub.Publisher
	// PublishTimeout bounds the notification (DefaultPublishTimeout).
	PublishTimeout time.Duration
	// Registerer receives the metrics. Nil: registered nowhere.
	Registerer prometheus.Registerer
}

// Inbox receives items. It is safe for concurrent use.
type Inbox struct {
	pool    *pgxpool.Pool
	limiter Limiter
	o       Options
	m       *metrics
}

// New makes an Inbox storing receipts through pool and limiting senders with limiter.
func New(pool *pgxpool.Pool, limiter Limiter, o Options) (*Inbox, error) {
	if pool == nil || limiter == nil {
		return nil, errors.New("inbox: New: nil pool or limiter")
	}
	if o.PublishTimeout < 0 {
		return nil, fmt.Errorf("inbox: New: PublishTimeout %s: want zero or positive", o.PublishTimeout)
	}
	if o.PublishTimeout == 0 {
		o.PublishTimeout = DefaultPublishTimeout
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("inbox: New: metrics: %w", err)
	}
	return &Inbox{pool: pool, limiter: limiter, o: o, m: m}, nil
}

// Migrate creates the table and its index when they are missing.
func (b *Inbox) Migrate(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, Migration); err != nil {
		return fmt.Errorf("inbox: migrate: %w", err)
	}
	return nil
}

// Deliver rate-limits the sender, commits the item's receipt and notifies the
// recipient. It returns a Receipt only once the receipt is committed; any error
// means the item is not acknowledged and the sender must retry it.
func (b *Inbox) Deliver(ctx context.Context, it Item) (Receipt, error) {
	if err := it.validate(); err != nil {
		b.m.deliveries.WithLabelValues(resultInvalid).Inc()
		return Receipt{}, err
	}
	d, err := b.limiter.Allow(ctx, ratelimit.Subject{Service: it.Service}, vm1.APIRouteInternalInbox)
	switch {
	case errors.Is(err, ratelimit.ErrUnavailable):
		b.m.deliveries.WithLabelValues(resultUnavailable).Inc()
		return Receipt{}, fmt.Errorf("%w: rate limiter: %w", ErrUnavailable, err)
	case err != nil:
		b.m.deliveries.WithLabelValues(resultError).Inc()
		return Receipt{}, fmt.Errorf("inbox: rate limit: %w", err)
	case !d.Allowed:
		b.m.deliveries.WithLabelValues(resultRateLimited).Inc()
		return Receipt{}, &RateLimitedError{RetryAfter: d.RetryAfter}
	}
	r, err := b.store(ctx, it)
	if err != nil {
		result := resultUnavailable
		if errors.Is(err, ErrConflict) {
			result = resultConflict
		}
		b.m.deliveries.WithLabelValues(result).Inc()
		return Receipt{}, err
	}
	r.Degraded = d.Degraded
	if r.Duplicate {
		b.m.deliveries.WithLabelValues(resultDuplicate).Inc()
		return r, nil
	}
	b.m.deliveries.WithLabelValues(resultAccepted).Inc()
	r.Notified = b.notify(ctx, it)
	return r, nil
}

// store commits the receipt, or reads the one a previous delivery committed.
func (b *Inbox) store(ctx context.Context, it Item) (Receipt, error) {
	var r Receipt
	err := b.pool.QueryRow(ctx, `INSERT INTO inbox_receipts (service, delivery_id, kind, recipient_id, payload)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (service, delivery_id) DO NOTHING
		RETURNING id, received_at`, it.Service, it.DeliveryID, it.Kind, it.RecipientID, it.Payload).Scan(&r.ID, &r.ReceivedAt)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Receipt{}, fmt.Errorf("%w: store receipt: %w", ErrUnavailable, err)
	}
	var kind, recipient string
	var payload []byte
	err = b.pool.QueryRow(ctx, `SELECT id, received_at, kind, recipient_id::text, payload FROM inbox_receipts
		WHERE service = $1 AND delivery_id = $2`, it.Service, it.DeliveryID).Scan(&r.ID, &r.ReceivedAt, &kind, &recipient, &payload)
	if err != nil {
		return Receipt{}, fmt.Errorf("%w: read receipt: %w", ErrUnavailable, err)
	}
	if kind != it.Kind || recipient != it.RecipientID || !bytes.Equal(payload, it.Payload) {
		return Receipt{}, ErrConflict
	}
	r.Duplicate = true
	return r, nil
}

// notify publishes EventReceived on the recipient's channel, within
// PublishTimeout; a failure (Redis down) is counted and changes nothing else.
func (b *Inbox) notify(ctx context.Context, it Item) bool {
	if b.o.Publisher == nil {
		return false
	}
	ch, err := pubsub.User(it.RecipientID)
	if err != nil {
		b.m.notifications.WithLabelValues(notifyDropped).Inc()
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, b.o.PublishTimeout)
	defer cancel()
	_, err = b.o.Publisher.Publish(pctx, ch, pubsub.Event{
		ID: it.DeliveryID, Type: "inbox.received", Entity: it.RecipientID,
		DTO: Received{Service: it.Service, Kind: it.Kind},
	})
	if err != nil {
		b.m.notifications.WithLabelValues(notifyDropped).Inc()
		return false
	}
	b.m.notifications.WithLabelValues(notifySent).Inc()
	return true
}

func (it Item) validate() error {
	bad := func(field, reason string) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidItem, field, reason)
	}
	switch {
	case !nameOK(it.Service, 32, true):
		return bad("Service", "want 1..32 characters of [A-Za-z0-9._-]")
	case !canonicalUUID(it.DeliveryID):
		return bad("DeliveryID", "want a canonical lower-case UUID")
	case !nameOK(it.Kind, 64, false):
		return bad("Kind", "want 1..64 characters of [a-z0-9._-]")
	case !canonicalUUID(it.RecipientID):
		return bad("RecipientID", "want a canonical lower-case UUID")
	case len(it.Payload) > MaxPayload:
		return bad("Payload", fmt.Sprintf("%d bytes, the limit is %d", len(it.Payload), MaxPayload))
	}
	return nil
}

func canonicalUUID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// nameOK: 1..max characters of [a-z0-9._-], and A-Z too when upper.
func nameOK(s string, max int, upper bool) bool {
	if len(s) < 1 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || upper && c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Results of a delivery; each is a result label of han_api_inbox_deliveries_total.
const (
	resultAccepted    = "accepted"
	resultDuplicate   = "duplicate"
	resultRateLimited = "rate_limited"
	resultUnavailable = "unavailable"
	resultConflict    = "conflict"
	resultInvalid     = "invalid"
	resultError       = "error"

	notifySent    = "sent"
	notifyDropped = "dropped"
)

type metrics struct {
	deliveries    *prometheus.CounterVec
	notifications *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	set := promreg.On(reg)
	m := &metrics{
		deliveries:    set.CounterVec("han_api_inbox_deliveries_total", "Deliveries to the internal inbox by result (accepted, duplicate: a retry of a stored item, rate_limited, unavailable, conflict, invalid, error); only accepted and duplicate are acknowledged.", "result"),
		notifications: set.CounterVec("han_api_inbox_notifications_total", "Realtime notifications of accepted inbox items by result (sent, dropped: Redis unavailable; the recipient reconciles through REST).", "result"),
	}
	for _, r := range []string{resultAccepted, resultDuplicate, resultRateLimited, resultUnavailable, resultConflict, resultInvalid, resultError} {
		m.deliveries.WithLabelValues(r)
	}
	for _, r := range []string{notifySent, notifyDropped} {
		m.notifications.WithLabelValues(r)
	}
	return m, set.Err()
}
