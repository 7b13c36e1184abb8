package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/services/elang/outbox"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Job is a claimed job.
type Job struct {
	ID      int64
	Queue   string
	Payload []byte
	// Attempt counts the claims of this job, this one included (1 the first time).
	Attempt int
}

// Handler runs a job. It must be idempotent: a job whose worker died mid-run is run
// again once its lease ends. An error releases the job for another attempt. ctx
// ends when the worker shuts down: a handler that returns nil then (it finished)
// has its job recorded done; one that returns an error is given back unrun.
type Handler func(ctx context.Context, j Job) error

// WorkerOptions configure a Worker. The zero value takes every default, except
// Queues, which is required.
type WorkerOptions struct {
	// Queues the worker runs jobs of (required).
	Queues []string
	// Batch bounds the notifications read at once and the jobs claimed at once (default 10).
	Batch int
	// Block is how long a step waits on the stream when there is nothing to do; it
	// is also the period of the SQL sweep (default 1s).
	Block time.Duration
	// Lease is how long a claimed job is the worker's (default 30s); a job whose
	// worker died is claimable again after it.
	Lease time.Duration
	// ReclaimIdle: notifications another consumer has not acknowledged for this long
	// are reclaimed with XAUTOCLAIM (default 30s).
	ReclaimIdle time.Duration
	// MaxAttempts: a job failing this many times is given up (state failed; default 5).
	MaxAttempts int
	// Relay, when set, runs one relay pass before each wait, so a worker also
	// forwards notifications (a separate outbox:work process keeps events timely
	// when the queue is always busy).
	Relay *outbox.Relay
	// Registerer receives the worker's metrics (nil: none). Workers of one
	// process on the same Registerer share them.
	Registerer prometheus.Registerer
	// Logger (nil: slog.Default()).
	Logger *slog.Logger
}

// Worker runs jobs of its queues (queue:work).
type Worker struct {
	db *pgxpool.Pool
	g  *Group
	h  Handler
	o  WorkerOptions

	jobs      *prometheus.CounterVec
	reclaimed prometheus.Counter
}

// NewWorker makes a worker of db's jobs woken through g.
func NewWorker(db *pgxpool.Pool, g *Group, h Handler, o WorkerOptions) *Worker {
	if o.Batch <= 0 {
		o.Batch = 10
	}
	if o.Block <= 0 {
		o.Block = time.Second
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.ReclaimIdle <= 0 {
		o.ReclaimIdle = 30 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	set := promreg.On(o.Registerer)
	w := &Worker{db: db, g: g, h: h, o: o,
		jobs:      set.CounterVec("elang_queue_jobs_total", "Jobs by outcome: done, retry, failed, or released (given back unrun or interrupted at shutdown).", "outcome"),
		reclaimed: set.Counter("elang_queue_reclaimed_total", "Notifications reclaimed from consumers that stopped acknowledging (XAUTOCLAIM)."),
	}
	set.LogErr(o.Logger, "consumer: worker")
	return w
}

// Work runs steps until ctx ends, then returns nil. A failed step is logged and the
// next one follows after Block: while Redis is down the worker polls SQL every Block.
func (w *Worker) Work(ctx context.Context) error {
	if len(w.o.Queues) == 0 {
		return errors.New("consumer: worker: no queues")
	}
	if err := w.g.Ensure(ctx); err != nil && ctx.Err() == nil {
		w.o.Logger.Warn("queue worker: consumer group not created yet; SQL sweeps go on", "err", err)
	}
	for ctx.Err() == nil {
		if _, err := w.Step(ctx); err != nil && ctx.Err() == nil {
			w.o.Logger.Warn("queue worker step failed", "err", err)
			pause(ctx, w.o.Block)
		}
	}
	return nil
}

// Step is one round: reclaim notifications a dead consumer left, read a batch of
// new ones (waiting at most Block, only when nothing was reclaimed or run), claim
// and run every claimable job of the worker's queues from SQL in batches (whether
// or not a notification named it: this is also the sweep for lost notifications),
// then acknowledge the notifications. While Redis cannot answer, the step still
// runs what SQL holds and returns the Redis error with the count. It returns how
// many jobs it ran.
func (w *Worker) Step(ctx context.Context) (int, error) {
	if w.o.Relay != nil {
		if _, err := w.o.Relay.Dispatch(ctx); err != nil && ctx.Err() == nil {
			w.o.Logger.Warn("queue worker: relay pass failed", "err", err)
		}
	}
	notes, redisErr := w.g.Reclaim(ctx, w.o.ReclaimIdle, w.o.Batch)
	w.reclaimed.Add(float64(len(notes)))
	ran, err := w.drain(ctx)
	if err != nil || redisErr != nil {
		return ran, errors.Join(redisErr, err)
	}
	block := w.o.Block
	if len(notes) > 0 || ran > 0 {
		block = 0 // there was work: read what is there, wait for nothing
	}
	read, err := w.g.Read(ctx, w.o.Batch, block)
	if err != nil {
		return ran, err
	}
	if len(read) > 0 {
		n, err := w.drain(ctx)
		ran += n
		if err != nil {
			return ran, err
		}
	}
	return ran, w.g.Ack(ctx, append(notes, read...))
}

// drain claims and runs jobs until a claim finds less than a batch. Once ctx ends
// (shutdown), the claimed jobs not yet started are released, not run.
func (w *Worker) drain(ctx context.Context) (int, error) {
	ran := 0
	for ctx.Err() == nil {
		jobs, err := w.claim(ctx)
		if err != nil {
			return ran, err
		}
		for i, j := range jobs {
			if ctx.Err() != nil {
				return ran, w.release(ctx, jobs[i:])
			}
			if err := w.run(ctx, j); err != nil {
				return ran, err
			}
			ran++
		}
		if len(jobs) < w.o.Batch {
			return ran, nil
		}
	}
	return ran, nil
}

// recordTimeout bounds the SQL write that records a job's outcome, which runs even
// after ctx ended so a job that finished during shutdown is not run again.
const recordTimeout = 5 * time.Second

// release gives claimed jobs back (ready, their claim not counted as an attempt).
func (w *Worker) release(ctx context.Context, jobs []Job) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	for _, j := range jobs {
		if _, err := w.db.Exec(rctx, `UPDATE elang_jobs SET state = 'ready', reserved_until = NULL, attempts = attempts - 1
			WHERE id = $1 AND attempts = $2 AND state = 'reserved'`, j.ID, j.Attempt); err != nil {
			return fmt.Errorf("consumer: release job %d: %w", j.ID, err)
		}
		w.jobs.WithLabelValues("released").Inc()
	}
	return nil
}

// claim reserves at most a batch of claimable jobs (ready, or reserved with the
// lease over) in id order; SKIP LOCKED lets workers claim side by side.
func (w *Worker) claim(ctx context.Context) ([]Job, error) {
	rows, err := w.db.Query(ctx, `UPDATE elang_jobs SET state = 'reserved', reserved_until = now() + $3::interval, attempts = attempts + 1
		WHERE id IN (SELECT id FROM elang_jobs WHERE queue = ANY($1) AND (state = 'ready' OR state = 'reserved' AND reserved_until < now())
			ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING id, queue, payload, attempts`, w.o.Queues, w.o.Batch, w.o.Lease)
	if err != nil {
		return nil, fmt.Errorf("consumer: claim jobs: %w", err)
	}
	out, err := pgx.AppendRows([]Job(nil), rows, func(row pgx.CollectableRow) (Job, error) {
		var j Job
		return j, row.Scan(&j.ID, &j.Queue, &j.Payload, &j.Attempt)
	})
	if err != nil {
		return nil, fmt.Errorf("consumer: claim jobs: %w", err)
	}
	slices.SortFunc(out, func(a, b Job) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// run runs j and records its outcome; the update counts only while the lease is
// still this claim's (attempts unchanged). A handler that fails after ctx ended was
// interrupted by the shutdown: the job is released, the attempt not counted. The
// outcome is recorded even after ctx ended (bounded by recordTimeout).
func (w *Worker) run(ctx context.Context, j Job) error {
	herr := w.h(ctx, j)
	if herr != nil && ctx.Err() != nil {
		return w.release(ctx, []Job{j})
	}
	outcome, q := "done", `UPDATE elang_jobs SET state = 'done', finished_at = now(), reserved_until = NULL WHERE id = $1 AND attempts = $2 AND state = 'reserved'`
	switch {
	case herr != nil && j.Attempt >= w.o.MaxAttempts:
		outcome, q = "failed", `UPDATE elang_jobs SET state = 'failed', finished_at = now(), reserved_until = NULL WHERE id = $1 AND attempts = $2 AND state = 'reserved'`
	case herr != nil:
		outcome, q = "retry", `UPDATE elang_jobs SET state = 'ready', reserved_until = NULL WHERE id = $1 AND attempts = $2 AND state = 'reserved'`
	}
	if herr != nil {
		w.o.Logger.Warn("queue job failed", "queue", j.Queue, "job", j.ID, "attempt", j.Attempt, "outcome", outcome, "err", herr)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if _, err := w.db.Exec(rctx, q, j.ID, j.Attempt); err != nil {
		return fmt.Errorf("consumer: record job %d: %w", j.ID, err)
	}
	w.jobs.WithLabelValues(outcome).Inc()
	return nil
}
