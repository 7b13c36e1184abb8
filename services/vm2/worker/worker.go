// Package worker is Message Safety's claim loop: a Worker claims tasks from
// PostgreSQL (taskqueue) and hands them to a handler, extending each lease
// while it runs (seed 004 §1, §6, §8). PostgreSQL is its only queue and lease
// source: a wake-up (waker) only ends its wait early, and it polls every
// PollInterval anyway (bounded: the poll cannot be switched off), so a Redis
// that is down, hung or restarted slows the claim by one poll interval at
// most and never stops it.
//
// Metrics, on Options.Registerer: han_safety_task_claims_total by trigger,
// han_safety_tasks_claimed_total, han_safety_task_claim_errors_total and
// han_safety_tasks_finished_total by result.
package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/taskqueue"
	"github.com/hanchat/luagen/services/vm2/waker"
	"github.com/prometheus/client_golang/prometheus"
)

// Worker defaults and bounds.
const (
	// DefaultPollInterval is how long a Worker waits for a wake-up before it polls
	// PostgreSQL anyway.
	DefaultPollInterval = 2 * time.Second
	// MinPollInterval and MaxPollInterval bound Options.PollInterval: the
	// fallback poll is what finds tasks while Redis is down, so it may not be
	// switched off.
	MinPollInterval = 10 * time.Millisecond
	MaxPollInterval = time.Minute
	// DefaultBatch is how many tasks one claim takes.
	DefaultBatch = 16
	// DefaultTaskLease is the lease of a claimed task, extended while it is handled.
	DefaultTaskLease = 30 * time.Second
)

// Claim triggers; each is a trigger label of han_safety_task_claims_total.
const (
	triggerStart    = "start"    // the first claim of Run
	triggerWakeup   = "wakeup"   // a wake-up on han:safety:wakeup (or a (re)subscription)
	triggerInterval = "interval" // the fallback poll: no wake-up within PollInterval
	triggerBacklog  = "backlog"  // the last claim took a full batch: more are waiting
)

// Task results; each is a result label of han_safety_tasks_finished_total.
const (
	finishedDone      = "done"       // handled and completed
	finishedFailed    = "failed"     // the handler failed: released to the queue
	finishedLeaseLost = "lease_lost" // another worker claimed it meanwhile: this result was dropped
)

// Options configure a Worker. Zero fields take the defaults.
type Options struct {
	// Owner names this worker in lease_owner, 1..64 bytes (default: a random UUID).
	Owner string
	// Batch is how many tasks one claim takes, 1..1000 (DefaultBatch).
	Batch int
	// Lease is a claimed task's lease, 10ms..1h (DefaultTaskLease); it is extended
	// every third of it while the task is handled.
	Lease time.Duration
	// PollInterval is the fallback poll: how long the worker waits for a wake-up
	// before it claims anyway, MinPollInterval..MaxPollInterval (DefaultPollInterval).
	PollInterval time.Duration
	// Registerer receives the worker metrics. Nil: registered nowhere. Workers of
	// one process may share it: they then count together.
	Registerer prometheus.Registerer
}

// Worker claims safety tasks from PostgreSQL and hands them to a handler
// (seed 004 §1, §6, §8). PostgreSQL is its only queue and lease source: a
// wake-up on han:safety:wakeup only ends its wait early, and it polls every
// PollInterval anyway, so a Redis that is down, hung or restarted slows nothing
// but the wake-up.
type Worker struct {
	q     *taskqueue.Queue
	waker *waker.Waker
	o     Options
	m     *workerMetrics
}

// New makes a Worker on q. wk may be nil: the worker then only polls.
func New(q *taskqueue.Queue, wk *waker.Waker, o Options) (*Worker, error) {
	if q == nil {
		return nil, errors.New("safety: worker.New: nil Queue")
	}
	if o.Owner == "" {
		o.Owner = uuid.NewString()
	}
	if o.Batch == 0 {
		o.Batch = DefaultBatch
	}
	if o.Lease == 0 {
		o.Lease = DefaultTaskLease
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	switch {
	case len(o.Owner) > 64:
		return nil, fmt.Errorf("safety: worker.New: Owner of %d bytes: want 1..64", len(o.Owner))
	case o.Batch < 1 || o.Batch > 1000:
		return nil, fmt.Errorf("safety: worker.New: Batch %d: want 1..1000", o.Batch)
	case o.Lease < 10*time.Millisecond || o.Lease > time.Hour:
		return nil, fmt.Errorf("safety: worker.New: Lease %s: want 10ms..1h", o.Lease)
	case o.PollInterval < MinPollInterval || o.PollInterval > MaxPollInterval:
		return nil, fmt.Errorf("safety: worker.New: PollInterval %s: want %s..%s", o.PollInterval, MinPollInterval, MaxPollInterval)
	}
	m, err := newWorkerMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("safety: worker.New: metrics: %w", err)
	}
	return &Worker{q: q, waker: wk, o: o, m: m}, nil
}

// Owner is the name this worker leases tasks under.
func (w *Worker) Owner() string { return w.o.Owner }

// Run claims and handles tasks until ctx ends, and returns ctx's error. handle
// gets one task at a time, with a context that ends if the task's lease is lost;
// its success completes the task (fenced by the claim's generation), its error
// puts the task back in the queue. A failed claim (PostgreSQL unreachable) is
// counted and tried again after PollInterval.
func (w *Worker) Run(ctx context.Context, handle func(ctx context.Context, t taskqueue.Task) error) error {
	if handle == nil {
		return errors.New("safety: Worker.Run: nil handler")
	}
	var wake <-chan safetyrecord.Wakeup
	if w.waker != nil {
		// Subscribe never waits for Redis longer than PublishTimeout and does not
		// fail when Redis is down: the subscription follows when it is back.
		sub, err := w.waker.Subscribe(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = sub.Close() }()
		wake = sub.C()
	}
	timer := time.NewTimer(w.o.PollInterval)
	defer timer.Stop()
	trigger := triggerStart
	for {
		n, err := w.round(ctx, trigger, handle)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil && n == w.o.Batch {
			trigger = triggerBacklog
			continue
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(w.o.PollInterval)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			trigger = triggerInterval
		case _, ok := <-wake:
			if !ok {
				wake = nil // the subscription is closed: poll on the timer alone
			}
			trigger = triggerWakeup
		}
	}
}

// round claims one batch and handles it; n is how many tasks it claimed.
func (w *Worker) round(ctx context.Context, trigger string, handle func(ctx context.Context, t taskqueue.Task) error) (int, error) {
	w.m.claims.WithLabelValues(trigger).Inc()
	tasks, err := w.q.Claim(ctx, w.o.Owner, w.o.Batch, w.o.Lease)
	if err != nil {
		w.m.claimErrors.Inc()
		return 0, err
	}
	w.m.claimed.Add(float64(len(tasks)))
	for _, t := range tasks {
		if ctx.Err() != nil {
			// Unhandled tasks go back at once rather than when their leases end.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = w.q.Release(rctx, t)
			cancel()
			continue
		}
		w.m.finished.WithLabelValues(w.handleOne(ctx, t, handle)).Inc()
	}
	return len(tasks), nil
}

// handleOne runs handle on t while extending its lease, then completes or
// releases it, and says how it ended.
func (w *Worker) handleOne(ctx context.Context, t taskqueue.Task, handle func(ctx context.Context, t taskqueue.Task) error) string {
	work, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	lost := make(chan error, 1)
	go func() {
		tick := time.NewTicker(w.o.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				lost <- nil
				return
			case <-tick.C:
				ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), w.o.Lease/3)
				err := w.q.Extend(ectx, t, w.o.Lease)
				ecancel()
				if errors.Is(err, taskqueue.ErrLeaseLost) {
					cancel(err)
					lost <- err
					return
				}
			}
		}
	}()
	err := handle(work, t)
	close(stop)
	if <-lost != nil {
		return finishedLeaseLost
	}
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), w.o.Lease)
	defer fcancel()
	if err != nil {
		if rerr := w.q.Release(fctx, t); errors.Is(rerr, taskqueue.ErrLeaseLost) {
			return finishedLeaseLost
		}
		return finishedFailed
	}
	if cerr := w.q.Complete(fctx, t); cerr != nil {
		if errors.Is(cerr, taskqueue.ErrLeaseLost) {
			return finishedLeaseLost
		}
		return finishedFailed // still leased: another claim takes it when the lease ends
	}
	return finishedDone
}

// workerMetrics are the Worker's collectors, shared by the workers of one Registerer.
type workerMetrics struct {
	claims      *prometheus.CounterVec // trigger
	claimed     prometheus.Counter
	claimErrors prometheus.Counter
	finished    *prometheus.CounterVec // result
}

func newWorkerMetrics(reg prometheus.Registerer) (*workerMetrics, error) {
	s := promreg.On(reg)
	m := &workerMetrics{
		claims:      s.CounterVec("han_safety_task_claims_total", "Claims of safety tasks from PostgreSQL by trigger (start, wakeup, interval: the fallback poll, backlog: the last claim took a full batch).", "trigger"),
		claimed:     s.Counter("han_safety_tasks_claimed_total", "Safety tasks claimed from PostgreSQL."),
		claimErrors: s.Counter("han_safety_task_claim_errors_total", "Claims of safety tasks that failed (PostgreSQL unreachable); retried after the poll interval."),
		finished:    s.CounterVec("han_safety_tasks_finished_total", "Claimed safety tasks by result (done, failed: released to the queue, lease_lost: claimed by another worker meanwhile).", "result"),
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	for _, t := range []string{triggerStart, triggerWakeup, triggerInterval, triggerBacklog} {
		m.claims.WithLabelValues(t)
	}
	for _, r := range []string{finishedDone, finishedFailed, finishedLeaseLost} {
		m.finished.WithLabelValues(r)
	}
	return m, nil
}
