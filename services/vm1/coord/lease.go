package coord

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LeaseMigration is the SQL that creates the coord_leases table (idempotent:
// CREATE ... IF NOT EXISTS). LeaseStore.Migrate runs it.
//
//go:embed migrations/001_coord_leases.sql
var LeaseMigration string

// Sentinel errors of the PostgreSQL row lease, matched with errors.Is.
var (
	// ErrLeaseHeld: another owner holds the row lease (or is claiming it right now).
	ErrLeaseHeld = errors.New("coord: row lease held by another owner")
	// ErrLeaseLost: the row lease ran out or was taken over; a write fenced by it
	// must not happen.
	ErrLeaseLost = errors.New("coord: row lease lost")
)

// LeaseStore keeps the PostgreSQL row leases of the coordination locks (table
// coord_leases): the protection workers rely on, where the Redis lock is only an
// accelerator (seed 000 §6). Table names are unqualified: point the pool's
// search_path at the schema that holds them. It is safe for concurrent use.
type LeaseStore struct {
	pool *pgxpool.Pool
}

// NewLeaseStore returns a LeaseStore on pool, which must not be nil.
func NewLeaseStore(pool *pgxpool.Pool) *LeaseStore {
	return &LeaseStore{pool: pool}
}

// Migrate creates the table when it is missing.
func (s *LeaseStore) Migrate(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, LeaseMigration); err != nil {
		return fmt.Errorf("coord: migrate leases: %w", err)
	}
	return nil
}

// claimLease takes the row when its lease is free or ran out. FOR UPDATE SKIP
// LOCKED: a row another claimer (or a fenced write, FOR SHARE) holds right now is
// skipped, so the claim answers at once instead of queueing behind it.
const claimLease = `UPDATE coord_leases AS l
	SET owner = $2, lease_until = clock_timestamp() + $3::bigint * interval '1 millisecond', fence = l.fence + 1
	FROM (SELECT name FROM coord_leases
		WHERE name = $1 AND (lease_until IS NULL OR lease_until <= clock_timestamp())
		FOR UPDATE SKIP LOCKED) AS free
	WHERE l.name = free.name
	RETURNING l.fence, l.lease_until`

// RowLease is one holding of a row lease. Its fencing token (Fence) is larger
// than that of every earlier holding of the same name.
type RowLease struct {
	s     *LeaseStore
	name  string
	owner string
	ttl   time.Duration
	fence int64
}

// Acquire claims the row lease of name for owner (1..64 bytes) for ttl (at
// least 1 ms, whole milliseconds). It fails with ErrLeaseHeld while another
// owner's lease runs.
func (s *LeaseStore) Acquire(ctx context.Context, name Name, owner string, ttl time.Duration) (*RowLease, error) {
	if name.lock == nil {
		return nil, errors.New("coord: acquire lease: empty Name (build it with SafetyRecovery, Delivery or SettingsRefresh)")
	}
	if len(owner) < 1 || len(owner) > 64 {
		return nil, fmt.Errorf("coord: acquire lease %s: owner of %d bytes: want 1..64", name, len(owner))
	}
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("coord: acquire lease %s: ttl %s: want at least 1ms", name, ttl)
	}
	key := name.Key()
	if _, err := s.pool.Exec(ctx, `INSERT INTO coord_leases (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, key); err != nil {
		return nil, fmt.Errorf("coord: acquire lease %s: %w", name, err)
	}
	var fence int64
	var until time.Time
	err := s.pool.QueryRow(ctx, claimLease, key, owner, ttl.Milliseconds()).Scan(&fence, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("coord: acquire lease %s: %w", name, ErrLeaseHeld)
	}
	if err != nil {
		return nil, fmt.Errorf("coord: acquire lease %s: %w", name, err)
	}
	return &RowLease{s: s, name: key, owner: owner, ttl: ttl, fence: fence}, nil
}

// Fence is this holding's fencing token.
func (l *RowLease) Fence() int64 { return l.fence }

// Extend renews the lease for another TTL, from PostgreSQL's clock. It fails
// with ErrLeaseLost when the lease ran out or another owner took it.
func (l *RowLease) Extend(ctx context.Context) error {
	tag, err := l.s.pool.Exec(ctx, `UPDATE coord_leases
		SET lease_until = clock_timestamp() + $4::bigint * interval '1 millisecond'
		WHERE name = $1 AND owner = $2 AND fence = $3 AND lease_until > clock_timestamp()`,
		l.name, l.owner, l.fence, l.ttl.Milliseconds())
	if err != nil {
		return fmt.Errorf("coord: extend lease: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("coord: extend lease: %w", ErrLeaseLost)
	}
	return nil
}

// Release frees the lease (the fence stays, so it never goes down). It fails
// with ErrLeaseLost when another owner holds it now, which it leaves alone.
func (l *RowLease) Release(ctx context.Context) error {
	tag, err := l.s.pool.Exec(ctx, `UPDATE coord_leases SET owner = NULL, lease_until = NULL
		WHERE name = $1 AND owner = $2 AND fence = $3`, l.name, l.owner, l.fence)
	if err != nil {
		return fmt.Errorf("coord: release lease: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("coord: release lease: %w", ErrLeaseLost)
	}
	return nil
}

// Verify is the fencing check of a write: in the caller's transaction tx, it
// confirms that this holding still owns a running lease and keeps the lease row
// shared-locked until tx ends, so no claim can take it over before the write
// commits. Write the side effect in tx after Verify; on ErrLeaseLost roll back.
func (l *RowLease) Verify(ctx context.Context, tx pgx.Tx) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM coord_leases
		WHERE name = $1 AND owner = $2 AND fence = $3 AND lease_until > clock_timestamp()
		FOR SHARE`, l.name, l.owner, l.fence).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("coord: fenced write: %w", ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("coord: fenced write: %w", err)
	}
	return nil
}
