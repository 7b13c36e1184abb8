// Command jobqueue is luagen's job queue example: a spec of its own
// (keyspec.yaml here) whose keys are the service's durable data (ttl none:
// jobs, ready lists, the delayed and active sets, bounded by the scripts) and
// whose leases expire, and five scripts (lua/jobs): enqueue, promote, claim,
// complete, reap. It generates its package into internal/redisgen (go
// generate, with the luagen of its go.mod's tool directive) and runs a worker
// that prints each job's payload. Run it with REDIS_URL set, e.g.
// REDIS_URL=redis://jobqueue:PASSWORD@127.0.0.1:6380/0 QUEUE=emails.
package main

//go:generate go tool luagen generate --spec keyspec.yaml --lua lua --out internal/redisgen

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/hanchat/luagen/examples/jobqueue/internal/redisgen/jobs"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		slog.Error("jobqueue", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// Not redis.ParseURL: its error quotes the URL, password included.
	opts, err := secrets.ParseRedisURL(jobs.DB0URLEnv, os.Getenv(jobs.DB0URLEnv))
	if err != nil {
		return err
	}
	client := redis.NewClient(opts)
	defer client.Close()
	// Under luagen's aclfile the application user runs scripts but may not
	// load them: here the service recovers NOSCRIPT through the loader
	// user's client, for these exact scripts only.
	if raw := os.Getenv("JOBQUEUE_LOADER_URL"); raw != "" {
		lopts, err := secrets.ParseRedisURL("JOBQUEUE_LOADER_URL", raw)
		if err != nil {
			return err
		}
		loader := redis.NewClient(lopts)
		defer loader.Close()
		runtime.WithLoader(client, loader, jobs.AllScripts()...)
	}
	scripts, err := jobs.NewScripts(jobs.Clients{DB0: client})
	if err != nil {
		return err
	}
	name := os.Getenv("QUEUE")
	if name == "" {
		name = "default"
	}
	q, err := NewQueue(scripts, name)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	return work(ctx, q, "worker-"+host, func(j Job) error {
		slog.Info("jobqueue: job", "id", j.ID, "attempts", j.Attempts, "bytes", len(j.Payload))
		return nil
	})
}

// work runs jobs until ctx ends: it claims the oldest ready job, runs it and
// completes it, maintaining the queue (due delayed jobs, expired leases)
// between jobs and once a second while the queue is empty. A job whose run
// fails is left to its lease: reap puts it back when the lease runs out.
func work(ctx context.Context, q *Queue, worker string, do func(Job) error) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if _, _, err := q.Maintain(ctx, 100); err != nil {
			return err
		}
		job, ok, err := q.Claim(ctx, worker)
		if err != nil {
			return err
		}
		if !ok {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			continue
		}
		if err := do(job); err != nil {
			slog.Warn("jobqueue: job failed; it runs again when its lease runs out", "id", job.ID, "err", err)
			continue
		}
		if err := q.Complete(ctx, job.ID, worker); err != nil {
			return err
		}
	}
}
