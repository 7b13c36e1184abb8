package idempotency

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/runtime"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migration is the SQL that creates the idempotency_records table and its index
// (idempotent: CREATE ... IF NOT EXISTS). Store.Migrate runs it.
//
//go:embed migrations/001_idempotency_records.sql
var Migration string

// errLeaseLost: a completion or extension by an owner whose claim was taken over.
var errLeaseLost = errors.New("lease lost")

// Store keeps idempotency records in PostgreSQL, the truth behind the Redis
// records. Table names are unqualified: point the pool's search_path at the
// schema that holds them.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Migrate creates the table and its index when they are missing.
func (s *Store) Migrate(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, Migration); err != nil {
		return fmt.Errorf("idempotency: migrate: %w", err)
	}
	return nil
}

// recordID names one record: the same parts as its Redis keys.
type recordID struct {
	scope   vm1.IdemScope
	userID  string
	keyHMAC runtime.HMAC
}

// durable is a row as the flow reads it.
type durable struct {
	fingerprint string
	state       vm1.IdemState // in_progress or completed
	status      int
	response    []byte
	resourceID  string
	version     int64
	ttl         time.Duration // until the row expires
}

const selectRecord = `SELECT fingerprint, state, coalesce(status, 0), coalesce(response, ''::bytea),
	coalesce(resource_id, ''), version,
	greatest(floor(extract(epoch FROM expires_at - now()) * 1000), 1)::bigint
	FROM idempotency_records
	WHERE scope = $1 AND user_id = $2::uuid AND key_hmac = $3 AND expires_at > now()`

// get reads a live row; found is false when there is none (or it expired).
func (s *Store) get(ctx context.Context, id recordID) (durable, bool, error) {
	var d durable
	var state string
	var ttlMS int64
	err := s.pool.QueryRow(ctx, selectRecord, string(id.scope), id.userID, string(id.keyHMAC)).
		Scan(&d.fingerprint, &state, &d.status, &d.response, &d.resourceID, &d.version, &ttlMS)
	if errors.Is(err, pgx.ErrNoRows) {
		return durable{}, false, nil
	}
	if err != nil {
		return durable{}, false, fmt.Errorf("idempotency: read durable record: %w", err)
	}
	d.state = vm1.IdemState(state)
	d.ttl = time.Duration(ttlMS) * time.Millisecond
	return d, true, nil
}

// claimSQL inserts an in-progress row for owner, or takes over one that
// expired, or one in progress with the same fingerprint whose lease ran out. It
// returns no row when the record exists and may not be taken.
const claimSQL = `INSERT INTO idempotency_records AS r
	(scope, user_id, key_hmac, fingerprint, state, owner, lease_until, version, created_at, expires_at)
	VALUES ($1, $2::uuid, $3, $4, 'in_progress', $5, now() + $6::float8 * interval '1 millisecond', 1, now(),
		now() + $7::float8 * interval '1 millisecond')
	ON CONFLICT (scope, user_id, key_hmac) DO UPDATE SET
		fingerprint = EXCLUDED.fingerprint, state = 'in_progress', owner = EXCLUDED.owner,
		lease_until = EXCLUDED.lease_until, version = r.version + 1,
		status = NULL, response = NULL, resource_id = NULL, completed_at = NULL,
		created_at = CASE WHEN r.expires_at <= now() THEN now() ELSE r.created_at END,
		expires_at = CASE WHEN r.expires_at <= now() THEN EXCLUDED.expires_at ELSE r.expires_at END
	WHERE r.expires_at <= now()
		OR (r.state = 'in_progress' AND r.lease_until <= now() AND r.fingerprint = EXCLUDED.fingerprint)
	RETURNING version`

// claim makes owner the one who runs the call. When the record exists and
// cannot be taken, claimed is false and rec is the row that holds it.
func (s *Store) claim(ctx context.Context, id recordID, fingerprint, owner string, lease time.Duration) (claimed bool, version int64, rec durable, err error) {
	for attempt := 0; attempt < 3; attempt++ {
		err = s.pool.QueryRow(ctx, claimSQL, string(id.scope), id.userID, string(id.keyHMAC), fingerprint, owner,
			lease.Milliseconds(), vm1.APIIdemTTL.Milliseconds()).Scan(&version)
		if err == nil {
			return true, version, durable{}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return false, 0, durable{}, fmt.Errorf("idempotency: claim durable record: %w", err)
		}
		var found bool
		if rec, found, err = s.get(ctx, id); err != nil || found {
			return false, 0, rec, err
		}
		// The row was released or expired between the two statements: claim again.
	}
	return false, 0, durable{}, errors.New("idempotency: claim durable record: the row keeps changing")
}

// extend renews owner's lease; errLeaseLost when owner no longer holds it.
func (s *Store) extend(ctx context.Context, id recordID, owner string, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, `UPDATE idempotency_records SET lease_until = now() + $5::float8 * interval '1 millisecond'
		WHERE scope = $1 AND user_id = $2::uuid AND key_hmac = $3 AND owner = $4 AND state = 'in_progress'`,
		string(id.scope), id.userID, string(id.keyHMAC), owner, lease.Milliseconds())
	if err != nil {
		return fmt.Errorf("idempotency: extend durable lease: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return errLeaseLost
	}
	return nil
}

// release deletes owner's in-progress row, so a retry runs the call again.
func (s *Store) release(ctx context.Context, id recordID, owner string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_records
		WHERE scope = $1 AND user_id = $2::uuid AND key_hmac = $3 AND owner = $4 AND state = 'in_progress'`,
		string(id.scope), id.userID, string(id.keyHMAC), owner)
	if err != nil {
		return fmt.Errorf("idempotency: release durable record: %w", err)
	}
	return nil
}

// complete records the outcome in tx, the transaction of the call's own side
// effects, only while owner holds the claim (errLeaseLost otherwise). The row
// then lives 24 h (vm1.APIIdemTTL) from the completion: statement_timestamp(),
// not now(), which is when tx began, before the call ran.
func (s *Store) complete(ctx context.Context, tx pgx.Tx, id recordID, owner string, status int, response []byte, resourceID string) (int64, error) {
	var version int64
	err := tx.QueryRow(ctx, `UPDATE idempotency_records SET state = 'completed', owner = NULL, lease_until = NULL,
			status = $5, response = $6, resource_id = $7, completed_at = statement_timestamp(),
			expires_at = statement_timestamp() + $8::float8 * interval '1 millisecond', version = version + 1
		WHERE scope = $1 AND user_id = $2::uuid AND key_hmac = $3 AND owner = $4 AND state = 'in_progress'
		RETURNING version`,
		string(id.scope), id.userID, string(id.keyHMAC), owner, status, response, resourceID, vm1.APIIdemTTL.Milliseconds()).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errLeaseLost
	}
	if err != nil {
		return 0, fmt.Errorf("idempotency: complete durable record: %w", err)
	}
	return version, nil
}

// completedRow is a completed row with its identity, for warming Redis.
type completedRow struct {
	id  recordID
	rec durable
}

// recentCompleted lists at most limit live completed rows, newest first.
func (s *Store) recentCompleted(ctx context.Context, limit int) ([]completedRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT scope, user_id::text, key_hmac, fingerprint, status, response,
			coalesce(resource_id, ''), version,
			greatest(floor(extract(epoch FROM expires_at - now()) * 1000), 1)::bigint
		FROM idempotency_records WHERE state = 'completed' AND expires_at > now()
		ORDER BY completed_at DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("idempotency: list completed records: %w", err)
	}
	out, err := pgx.AppendRows([]completedRow(nil), rows, func(row pgx.CollectableRow) (completedRow, error) {
		var c completedRow
		var scope, hmac string
		var ttlMS int64
		err := row.Scan(&scope, &c.id.userID, &hmac, &c.rec.fingerprint, &c.rec.status, &c.rec.response,
			&c.rec.resourceID, &c.rec.version, &ttlMS)
		c.id.scope, c.id.keyHMAC = vm1.IdemScope(scope), runtime.HMAC(hmac)
		c.rec.state = vm1.IdemStateCompleted
		c.rec.ttl = time.Duration(ttlMS) * time.Millisecond
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("idempotency: list completed records: %w", err)
	}
	return out, nil
}

// Purge deletes at most limit expired rows and reports how many it deleted;
// call it periodically (rows expire 24 h after completion).
func (s *Store) Purge(ctx context.Context, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_records WHERE ctid IN
		(SELECT ctid FROM idempotency_records WHERE expires_at <= now() LIMIT $1)`, limit)
	if err != nil {
		return 0, fmt.Errorf("idempotency: purge: %w", err)
	}
	return tag.RowsAffected(), nil
}

// begin starts the transaction a call's side effects and its completion share.
func (s *Store) begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("idempotency: begin: %w", err)
	}
	return tx, nil
}
