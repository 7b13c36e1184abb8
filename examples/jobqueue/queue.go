package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hanchat/luagen/examples/jobqueue/internal/redisgen/jobs"
)

// Queue is one named job queue on the generated scripts: producers Enqueue,
// workers Claim and Complete, and a maintenance loop Promotes due delayed
// jobs and Reaps the jobs whose lease ran out.
type Queue struct {
	scripts *jobs.Scripts
	jobs    jobs.JobsKey
	ready   jobs.ReadyKey
	delayed jobs.DelayedKey
	active  jobs.ActiveKey
}

// NewQueue is the queue named name (jobs.NewJobsKey's rule: 1..32 of
// [A-Za-z0-9._-]).
func NewQueue(scripts *jobs.Scripts, name string) (*Queue, error) {
	q := &Queue{scripts: scripts}
	var err error
	if q.jobs, err = jobs.NewJobsKey(name); err != nil {
		return nil, err
	}
	if q.ready, err = jobs.NewReadyKey(name); err != nil {
		return nil, err
	}
	if q.delayed, err = jobs.NewDelayedKey(name); err != nil {
		return nil, err
	}
	if q.active, err = jobs.NewActiveKey(name); err != nil {
		return nil, err
	}
	return q, nil
}

// ErrQueueFull is returned by Enqueue when the queue holds its bound.
var ErrQueueFull = jobs.ErrQueueFull

// ErrNotOwner is returned by Complete when the worker's lease ran out.
var ErrNotOwner = jobs.ErrNotOwner

// Enqueue stores a job under id (a UUID) and makes it ready, or due after
// delay; false when a job with this id is already stored.
func (q *Queue) Enqueue(ctx context.Context, id string, payload []byte, delay time.Duration) (bool, error) {
	return q.scripts.Enqueue(ctx, q.jobs, q.ready, q.delayed, jobs.EnqueueArgs{ID: id, Payload: payload, Delay: delay})
}

// Job is a job a worker holds.
type Job struct {
	ID       string
	Payload  []byte
	Attempts int64
}

// Claim takes the oldest ready job for worker under the lease the spec
// declares (jobs.LeaseTTL); ok is false when none is ready.
func (q *Queue) Claim(ctx context.Context, worker string) (job Job, ok bool, err error) {
	c, err := q.scripts.Claim(ctx, q.jobs, q.ready, q.active, jobs.ClaimArgs{Worker: worker})
	if err != nil || c.ID == nil {
		return Job{}, false, err
	}
	job = Job{ID: *c.ID, Attempts: c.Attempts}
	if c.Payload != nil {
		job.Payload = *c.Payload
	}
	return job, true, nil
}

// Complete deletes a job worker finished; ErrNotOwner when its lease ran
// out first (the job is then another worker's to run again).
func (q *Queue) Complete(ctx context.Context, id, worker string) error {
	_, err := q.scripts.Complete(ctx, q.jobs, q.active, jobs.CompleteArgs{ID: id, Worker: worker})
	return err
}

// Maintain makes up to limit due delayed jobs ready and puts up to limit
// jobs whose lease ran out back in the queue.
func (q *Queue) Maintain(ctx context.Context, limit int64) (promoted, requeued int64, err error) {
	if promoted, err = q.scripts.Promote(ctx, q.jobs, q.delayed, q.ready, jobs.PromoteArgs{Limit: limit}); err != nil {
		return 0, 0, fmt.Errorf("promote: %w", err)
	}
	if requeued, err = q.scripts.Reap(ctx, q.jobs, q.active, q.ready, jobs.ReapArgs{Limit: limit}); err != nil {
		return promoted, 0, fmt.Errorf("reap: %w", err)
	}
	return promoted, requeued, nil
}
