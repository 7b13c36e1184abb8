package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/runtime"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	DefaultBatch        = 100
	DefaultPoll         = 200 * time.Millisecond
	DefaultMaxBackoff   = 5 * time.Second
	DefaultPendingEvery = time.Second
	DefaultRedisTimeout = 5 * time.Second
)

// relayLock is the advisory lock a relay pass holds for its transaction: one pass at
// a time per database, so relays running side by side never repeat each other's
// appends. (A channel's order would hold without it: every pass sends its rows in
// id order on one connection, and a row's dedupe key makes its first append the only
// one.)
const relayLock = 0x656c616e67_01 // "elang", 1

// commitTimeout bounds the commit of a pass's marks, which is not cancelled with
// the pass's context.
const commitTimeout = 5 * time.Second

// ErrRedis: Redis refused or did not answer a relay pass; the rows stay pending and
// the next pass publishes them (Work retries with backoff).
var ErrRedis = errors.New("outbox: redis")

// Options configure a Relay. The zero value takes every default.
type Options struct {
	// Batch is the most rows one pass reads and sends in one pipeline (default
	// DefaultBatch, at most 10000).
	Batch int
	// MaxLen is the stream's MAXLEN (default and cap: elang.OutboxStreamMaxLen).
	MaxLen int64
	// Poll is how long Work waits after a pass that found less than a batch.
	Poll time.Duration
	// MaxBackoff caps Work's wait after a failed pass (doubling from Poll).
	MaxBackoff time.Duration
	// PendingEvery is how often Work counts the pending rows for the metric.
	PendingEvery time.Duration
	// RedisTimeout bounds a pass's pipeline (default DefaultRedisTimeout): a hung
	// Redis fails the pass instead of holding its transaction and the relay lock.
	// go-redis honours it when the client has ContextTimeoutEnabled (cmd/elang sets
	// it); otherwise the client's own ReadTimeout bounds the pipeline.
	RedisTimeout time.Duration
	// Registerer receives the relay's metrics (nil: none registered). A relay
	// of the same process on the same Registerer shares them.
	Registerer prometheus.Registerer
	// Logger (nil: slog.Default()). Nothing secret reaches it: errors name no URL.
	Logger *slog.Logger
}

// Relay publishes committed outbox rows into the stream. It never runs inside an
// application transaction: every pass is a transaction of its own on the pool.
type Relay struct {
	db      *pgxpool.Pool
	rdb     redis.UniversalClient
	scripts *elang.Scripts
	stream  elang.OutboxStreamKey
	prefix  elang.Prefix
	keyErr  error
	o       Options

	pending   prometheus.Gauge
	relayed   prometheus.Counter
	deduped   prometheus.Counter
	failures  prometheus.Counter
	lastCount time.Time

	// afterAppend, when set (tests), runs after Redis accepted a pass's appends and
	// before the SQL mark: the window a crash must not turn into a duplicate.
	afterAppend func(ctx context.Context, appended int)
}

// NewRelay makes a relay of the deployment p: rows of db go to the stream of p on
// rdb (database elang.DB0), through scripts bound to p.
func NewRelay(db *pgxpool.Pool, rdb redis.UniversalClient, scripts *elang.Scripts, p elang.Prefix, o Options) *Relay {
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	o.Batch = min(o.Batch, 10000)
	if o.MaxLen <= 0 || o.MaxLen > elang.OutboxStreamMaxLen {
		o.MaxLen = elang.OutboxStreamMaxLen
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.PendingEvery <= 0 {
		o.PendingEvery = DefaultPendingEvery
	}
	if o.RedisTimeout <= 0 {
		o.RedisTimeout = DefaultRedisTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	set := promreg.On(o.Registerer)
	r := &Relay{
		db: db, rdb: rdb, scripts: scripts, prefix: p, o: o,
		pending:  set.Gauge("elang_outbox_pending", "Outbox rows not yet published to the Redis stream (counted by the relay)."),
		relayed:  set.Counter("elang_outbox_relayed_total", "Outbox rows the relay marked delivered."),
		deduped:  set.Counter("elang_outbox_deduplicated_total", "Rows whose dedupe key showed an earlier append (a retry after a crash between XADD and the SQL mark)."),
		failures: set.Counter("elang_outbox_relay_failures_total", "Relay passes that failed (Redis or PostgreSQL); their rows stay pending."),
	}
	// A zero prefix builds no key: every pass then fails with the builder's error.
	r.stream, r.keyErr = elang.NewOutboxStreamKey(p)
	set.LogErr(o.Logger, "outbox: relay")
	return r
}

// Pass is what one relay pass did.
type Pass struct {
	// Read is the number of pending rows the pass read (at most Options.Batch).
	Read int
	// Appended rows were added to the stream by this pass; Deduplicated rows had
	// been appended before (their dedupe key held the id); both are now marked.
	Appended, Deduplicated int
	// Failed rows got an error reply from Redis and stay pending.
	Failed int
}

// Dispatch runs one pass: in a transaction of its own it reads at most a batch of
// committed pending rows in id order, appends each through outbox_relay in one
// pipeline, and marks delivered exactly the rows Redis accepted. A failed pass marks
// nothing it was not sure of; its rows stay pending.
func (r *Relay) Dispatch(ctx context.Context) (Pass, error) {
	p, err := r.pass(ctx)
	if err != nil {
		r.failures.Inc()
	}
	return p, err
}

type row struct {
	id            int64
	messageID     string
	kind, channel string
	ref           int64
}

func (r *Relay) pass(ctx context.Context) (Pass, error) {
	var p Pass
	if r.keyErr != nil {
		return p, fmt.Errorf("outbox: relay: %w", r.keyErr)
	}
	tx, err := r.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return p, fmt.Errorf("outbox: relay: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(relayLock)); err != nil {
		return p, fmt.Errorf("outbox: relay: lock: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT id, message_id::text, kind, channel, ref FROM elang_outbox
		WHERE delivered_at IS NULL ORDER BY id LIMIT $1`, r.o.Batch)
	if err != nil {
		return p, fmt.Errorf("outbox: relay: read: %w", err)
	}
	batch, err := pgx.AppendRows([]row(nil), rows, func(sc pgx.CollectableRow) (row, error) {
		var w row
		return w, sc.Scan(&w.id, &w.messageID, &w.kind, &w.channel, &w.ref)
	})
	if err != nil {
		return p, fmt.Errorf("outbox: relay: read: %w", err)
	}
	p.Read = len(batch)
	if len(batch) == 0 {
		return p, tx.Commit(ctx)
	}
	b := &runtime.Batch{}
	pend := make([]*runtime.Pending[elang.OutboxRelayResult], len(batch))
	for i, w := range batch {
		dedupe, err := elang.NewOutboxDedupeKey(r.prefix, w.messageID)
		if err != nil {
			return p, fmt.Errorf("outbox: relay: row %d: %w", w.id, err)
		}
		pend[i] = r.scripts.QueueOutboxRelay(b, r.stream, dedupe, elang.OutboxRelayArgs{
			MessageID: w.messageID, Kind: w.kind, Channel: w.channel, Ref: w.ref, Maxlen: r.o.MaxLen,
		})
	}
	rctx, cancel := context.WithTimeout(ctx, r.o.RedisTimeout)
	err = b.Exec(rctx, r.rdb)
	cancel()
	if err != nil {
		return p, fmt.Errorf("%w: relay pipeline of %d rows: %w", ErrRedis, len(batch), err)
	}
	ids := make([]int64, 0, len(batch))
	sids := make([]string, 0, len(batch))
	var firstErr error
	for i, pd := range pend {
		res, err := pd.Result()
		if err != nil {
			p.Failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: outbox row %d: %w", ErrRedis, batch[i].id, err)
			}
			continue
		}
		if res.Appended {
			p.Appended++
		} else {
			p.Deduplicated++
		}
		ids = append(ids, batch[i].id)
		sids = append(sids, res.ID)
	}
	if r.afterAppend != nil {
		r.afterAppend(ctx, p.Appended)
	}
	var marked int64
	if len(ids) > 0 {
		tag, err := tx.Exec(ctx, `UPDATE elang_outbox o SET delivered_at = now(), stream_id = u.sid
			FROM unnest($1::bigint[], $2::text[]) AS u(id, sid) WHERE o.id = u.id AND o.delivered_at IS NULL`, ids, sids)
		if err != nil {
			return p, fmt.Errorf("outbox: relay: mark %d rows: %w", len(ids), err)
		}
		marked = tag.RowsAffected()
	}
	// Once the marks are written the commit runs to its end even if ctx ends
	// meanwhile: a commit abandoned half way may have happened all the same, and
	// its result is what the counters must follow.
	cctx, cancelCommit := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	err = tx.Commit(cctx)
	cancelCommit()
	if err != nil {
		return p, fmt.Errorf("outbox: relay: commit the mark of %d rows: %w", len(ids), err)
	}
	r.relayed.Add(float64(marked))
	r.deduped.Add(float64(p.Deduplicated))
	return p, firstErr
}

// Pending counts the rows not yet published and sets the metric elang_outbox_pending.
func (r *Relay) Pending(ctx context.Context) (int64, error) {
	var n int64
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("outbox: count pending: %w", err)
	}
	r.pending.Set(float64(n))
	return n, nil
}

// Drain runs passes until one reads less than a full batch (outbox:dispatch): every
// row committed before Drain began is then published. progress, if set, is called
// after each pass with the running totals.
func (r *Relay) Drain(ctx context.Context, progress func(total Pass)) (Pass, error) {
	var total Pass
	for {
		p, err := r.Dispatch(ctx)
		total.Read += p.Read
		total.Appended += p.Appended
		total.Deduplicated += p.Deduplicated
		total.Failed += p.Failed
		if progress != nil && p.Read > 0 {
			progress(total)
		}
		if err != nil {
			return total, err
		}
		if p.Read < r.o.Batch {
			_, err := r.Pending(ctx)
			return total, err
		}
	}
}

// Work relays continuously until ctx ends (outbox:work), then returns nil. A failed
// pass (Redis lost, PostgreSQL down) is logged and retried after a backoff doubling
// from Poll to MaxBackoff; nothing pending is lost meanwhile, and once Redis answers
// again (even empty) the next pass publishes what is pending.
func (r *Relay) Work(ctx context.Context) error {
	backoff := r.o.Poll
	for {
		p, err := r.Dispatch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := time.Duration(0)
		switch {
		case err != nil:
			r.o.Logger.Warn("outbox relay pass failed; rows stay pending", "err", err, "retry_in", backoff)
			wait = backoff
			backoff = min(2*backoff, r.o.MaxBackoff)
		case p.Read < r.o.Batch:
			backoff = r.o.Poll
			wait = r.o.Poll
		default:
			backoff = r.o.Poll
		}
		if time.Since(r.lastCount) >= r.o.PendingEvery {
			if _, err := r.Pending(ctx); err == nil {
				r.lastCount = time.Now()
			}
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}
}
