// Package taskqueue is Message Safety's task queue in PostgreSQL (table
// safety_tasks, seed 004 §1, §8): its only queue and lease source. Tasks are
// queued with the write that needs them (Enqueue through the caller's
// transaction) and claimed with FOR UPDATE SKIP LOCKED under a lease whose
// generation fences every completion, extension and release. Redis holds no
// task state: a wake-up (package waker) only tells a worker to claim sooner.
package taskqueue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migration is the SQL that creates the safety_tasks table and its index
// (idempotent: CREATE ... IF NOT EXISTS). Queue.Migrate runs it.
//
//go:embed migrations/001_safety_tasks.sql
var Migration string

// ErrLeaseLost: the task's lease ran out and another worker claimed it (or
// it is done already); the completion, extension or release was refused.
var ErrLeaseLost = errors.New("safety: task lease lost")

// Kind is what a safety task checks.
type Kind string

// Task kinds.
const (
	KindText Kind = "text" // a message's text
	KindFile Kind = "file" // an attachment
	KindLink Kind = "link" // the links of a message
)

func (k Kind) valid() bool { return k == KindText || k == KindFile || k == KindLink }

// NewTask is a task to queue: its id and what it checks, by reference only
// (never the text, the file or the URL).
type NewTask struct {
	ID        string // a UUID
	Kind      Kind
	SubjectID string // the message or attachment, a UUID
}

// Task is a claimed task. Its Generation is the fencing token of this claim:
// Complete, Extend and Release present it, and fail once another claim raised it.
type Task struct {
	ID        string
	Kind      Kind
	SubjectID string
	// Generation is raised by every claim of the task.
	Generation int64
	// Attempts counts the claims of the task, this one included.
	Attempts int
	owner    string
}

// Execer is what Enqueue writes through: a pool, a connection, or the caller's
// transaction, so the task is queued with the write that needs it.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Queue is the safety_tasks table in PostgreSQL: Message Safety's only queue
// and lease source (seed 004 §1). Table names are unqualified: point the pool's
// search_path at the schema that holds them. It is safe for concurrent use.
type Queue struct {
	pool *pgxpool.Pool
}

// New returns a Queue on pool, which must not be nil.
func New(pool *pgxpool.Pool) *Queue {
	return &Queue{pool: pool}
}

// Migrate creates the table and its index when they are missing.
func (q *Queue) Migrate(ctx context.Context) error {
	if _, err := q.pool.Exec(ctx, Migration); err != nil {
		return fmt.Errorf("safety: migrate tasks: %w", err)
	}
	return nil
}

// Enqueue queues t through db (the caller's transaction, typically). A task
// whose id exists already is left as it is. Publish a wake-up (waker.Waker.Publish)
// after the transaction commits; workers find the task anyway at their next poll.
func (q *Queue) Enqueue(ctx context.Context, db Execer, t NewTask) error {
	if err := checkUUID("task id", t.ID); err != nil {
		return err
	}
	if err := checkUUID("subject id", t.SubjectID); err != nil {
		return err
	}
	if !t.Kind.valid() {
		return fmt.Errorf("safety: enqueue: task kind %q: want text, file or link", t.Kind)
	}
	if _, err := db.Exec(ctx, `INSERT INTO safety_tasks (id, kind, subject_id) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
		t.ID, string(t.Kind), t.SubjectID); err != nil {
		return fmt.Errorf("safety: enqueue: %w", err)
	}
	return nil
}

func checkUUID(what, s string) error {
	if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
		return fmt.Errorf("safety: enqueue: %s is not a UUID", what)
	}
	return nil
}

// claimTasks leases up to $3 queued tasks, or tasks whose lease ran out, oldest
// first, for owner $1. FOR UPDATE SKIP LOCKED: rows another worker is claiming
// right now are skipped, so workers never wait on each other or claim one task
// twice.
const claimTasks = `UPDATE safety_tasks AS t
	SET state = 'leased', lease_owner = $1, lease_until = clock_timestamp() + $2::bigint * interval '1 millisecond',
		generation = t.generation + 1, attempts = t.attempts + 1
	FROM (SELECT id FROM safety_tasks
		WHERE state = 'queued' OR (state = 'leased' AND lease_until <= clock_timestamp())
		ORDER BY created_at
		LIMIT $3
		FOR UPDATE SKIP LOCKED) AS c
	WHERE t.id = c.id
	RETURNING t.id::text, t.kind, t.subject_id::text, t.generation, t.attempts`

// Claim leases up to n (1..1000) tasks for owner (1..64 bytes) for lease.
func (q *Queue) Claim(ctx context.Context, owner string, n int, lease time.Duration) ([]Task, error) {
	switch {
	case len(owner) < 1 || len(owner) > 64:
		return nil, fmt.Errorf("safety: claim: owner of %d bytes: want 1..64", len(owner))
	case n < 1 || n > 1000:
		return nil, fmt.Errorf("safety: claim: %d tasks: want 1..1000", n)
	case lease < time.Millisecond:
		return nil, fmt.Errorf("safety: claim: lease %s: want at least 1ms", lease)
	}
	rows, err := q.pool.Query(ctx, claimTasks, owner, lease.Milliseconds(), n)
	if err != nil {
		return nil, fmt.Errorf("safety: claim: %w", err)
	}
	out, err := pgx.AppendRows([]Task(nil), rows, func(row pgx.CollectableRow) (Task, error) {
		t := Task{owner: owner}
		var kind string
		err := row.Scan(&t.ID, &kind, &t.SubjectID, &t.Generation, &t.Attempts)
		t.Kind = Kind(kind)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("safety: claim: %w", err)
	}
	return out, nil
}

// fenced runs a statement on t's row that must find it leased by this claim.
func (q *Queue) fenced(ctx context.Context, op, sql string, t Task, args ...any) error {
	tag, err := q.pool.Exec(ctx, sql, append([]any{t.ID, t.Generation, t.owner}, args...)...)
	if err != nil {
		return fmt.Errorf("safety: %s task: %w", op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("safety: %s task: %w", op, ErrLeaseLost)
	}
	return nil
}

const leasedBy = `id = $1 AND generation = $2 AND lease_owner = $3 AND state = 'leased'`

// Complete marks t done, if this claim still holds it.
func (q *Queue) Complete(ctx context.Context, t Task) error {
	return q.fenced(ctx, "complete", `UPDATE safety_tasks
		SET state = 'done', done_at = clock_timestamp(), lease_owner = NULL, lease_until = NULL
		WHERE `+leasedBy, t)
}

// Extend renews t's lease for lease, if this claim still holds it and its lease
// has not run out.
func (q *Queue) Extend(ctx context.Context, t Task, lease time.Duration) error {
	return q.fenced(ctx, "extend", `UPDATE safety_tasks
		SET lease_until = clock_timestamp() + $4::bigint * interval '1 millisecond'
		WHERE `+leasedBy+` AND lease_until > clock_timestamp()`, t, lease.Milliseconds())
}

// Release puts t back in the queue (a failed attempt), if this claim still holds it.
func (q *Queue) Release(ctx context.Context, t Task) error {
	return q.fenced(ctx, "release", `UPDATE safety_tasks
		SET state = 'queued', lease_owner = NULL, lease_until = NULL
		WHERE `+leasedBy, t)
}
