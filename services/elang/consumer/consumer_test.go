package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/elang/outbox"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

type env struct {
	db     *pgxpool.Pool
	srv    *redistest.Server
	rdb    *redis.Client
	prefix elang.Prefix
	relay  *outbox.Relay
}

func newEnv(t *testing.T) *env {
	t.Helper()
	redistest.Need(t)
	e := &env{db: pgtest.Schema(t, 40, outbox.Migration), srv: redistest.Start(t)}
	e.rdb = e.srv.Client(elang.DB0, func(o *redis.Options) { o.PoolSize = 16 })
	p, err := elang.NewPrefix("elang:consumer:")
	if err == nil {
		p, err = p.Test()
	}
	if err != nil {
		t.Fatal(err)
	}
	e.prefix = p
	scripts, err := elang.NewScripts(elang.Clients{DB0: e.rdb}, elang.WithPrefix(p))
	if err != nil {
		t.Fatal(err)
	}
	e.relay = outbox.NewRelay(e.db, e.rdb, scripts, p, outbox.Options{Batch: 1000})
	return e
}

func (e *env) group(t *testing.T, group, consumer string) *Group {
	t.Helper()
	g, err := NewGroup(e.rdb, e.prefix, group, consumer)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g
}

// write commits one transaction running f.
func (e *env) write(t *testing.T, f func(ctx context.Context, tx pgx.Tx) error) {
	t.Helper()
	ctx := context.Background()
	tx, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := f(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func (e *env) push(t *testing.T, queue string, n int) {
	t.Helper()
	e.write(t, func(ctx context.Context, tx pgx.Tx) error {
		for i := 0; i < n; i++ {
			if _, err := (outbox.Queue{}).Push(ctx, tx, queue, []byte(fmt.Sprint(i))); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) publish(t *testing.T, channel string, n int) {
	t.Helper()
	e.write(t, func(ctx context.Context, tx pgx.Tx) error {
		for i := 0; i < n; i++ {
			if _, err := (outbox.Events{}).Publish(ctx, tx, channel, []byte(fmt.Sprintf("%s #%d", channel, i))); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) drain(t *testing.T) {
	t.Helper()
	if _, err := e.relay.Drain(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func (e *env) count(t *testing.T, q string) int64 {
	t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !redistest.WaitFor(context.Background(), d, cond) {
		t.Fatalf("not within %s: %s", d, what)
	}
}

// Four workers of one group, woken by the stream a relay fills, run each of 600
// jobs exactly once (jobs of another queue are left alone), and acknowledge every
// notification they read.
func TestWorkersRunEachJobOnce(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	runs := map[int64]int{}
	h := func(_ context.Context, j Job) error {
		if j.Queue != "mail" {
			return fmt.Errorf("job %d of queue %s", j.ID, j.Queue)
		}
		mu.Lock()
		runs[j.ID]++
		mu.Unlock()
		return nil
	}
	var wg sync.WaitGroup
	regs := make([]*prometheus.Registry, 4)
	for i := range regs {
		regs[i] = prometheus.NewPedanticRegistry()
		o := WorkerOptions{Queues: []string{"mail"}, Batch: 25, Block: 50 * time.Millisecond, Registerer: regs[i]}
		w := NewWorker(e.db, e.group(t, "queue", fmt.Sprintf("w%d", i)), h, o)
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Work(ctx) }()
	}
	go func() { _ = e.relay.Work(ctx) }()
	for i := 0; i < 6; i++ {
		e.push(t, "mail", 100)
		e.push(t, "other", 10)
	}
	waitFor(t, 60*time.Second, "600 mail jobs done", func() bool {
		return e.count(t, "SELECT count(*) FROM elang_jobs WHERE queue = 'mail' AND state = 'done'") == 600
	})
	waitFor(t, 30*time.Second, "all 660 notifications read by the group and acknowledged", func() bool {
		p, err := e.srv.Admin().XPending(ctx, e.prefix.String()+"outbox:stream", "queue").Result()
		if err != nil || p.Count != 0 {
			return false
		}
		gs, err := e.srv.Admin().XInfoGroups(ctx, e.prefix.String()+"outbox:stream").Result()
		return err == nil && len(gs) == 1 && gs[0].EntriesRead == 660 && gs[0].Lag == 0
	})
	cancel()
	wg.Wait()
	if len(runs) != 600 {
		t.Fatalf("%d distinct jobs ran, want 600", len(runs))
	}
	for id, n := range runs {
		if n != 1 {
			t.Fatalf("job %d ran %d times", id, n)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM elang_jobs WHERE queue = 'other' AND state = 'ready' AND attempts = 0"); n != 60 {
		t.Fatalf("%d jobs of the other queue untouched, want 60", n)
	}
	var done float64
	for _, reg := range regs {
		done += promtest.Sum(t, reg, "elang_queue_jobs_total", map[string]string{"outcome": "done"})
	}
	if done != 600 {
		t.Fatalf("the workers' metrics count %v jobs done, want 600", done)
	}
}

// Notifications a consumer read and never acknowledged (it died) are reclaimed by
// a live worker with XAUTOCLAIM once idle for ReclaimIdle; a job a dead worker
// reserved runs again once its lease ends; a failing job is retried and given up
// after MaxAttempts.
func TestDeadConsumerIsReclaimed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dead := e.group(t, "queue", "dead")
	e.push(t, "mail", 40)
	e.drain(t)
	got, err := dead.Read(ctx, 100, 0)
	if err != nil || len(got) != 40 {
		t.Fatalf("the doomed consumer read %d notifications (%v), want 40", len(got), err)
	}
	// It also reserved job 1 with a lease that has ended, and died.
	if _, err := e.db.Exec(ctx, "UPDATE elang_jobs SET state = 'reserved', attempts = 1, reserved_until = now() - interval '1 second' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	attempts := map[int64]int{}
	h := func(_ context.Context, j Job) error {
		ran.Add(1)
		attempts[j.ID] = j.Attempt
		if j.ID == 2 {
			return fmt.Errorf("job 2 always fails")
		}
		return nil
	}
	reg := prometheus.NewPedanticRegistry()
	w := NewWorker(e.db, e.group(t, "queue", "live"), h, WorkerOptions{Queues: []string{"mail"}, Batch: 15, Block: 10 * time.Millisecond, ReclaimIdle: 20 * time.Millisecond, MaxAttempts: 3, Registerer: reg})
	pending := func(consumer string) int64 {
		ps, err := e.srv.Admin().XPendingExt(ctx, &redis.XPendingExtArgs{Stream: e.prefix.String() + "outbox:stream", Group: "queue", Start: "-", End: "+", Count: 1000, Consumer: consumer}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return int64(len(ps))
	}
	waitFor(t, 30*time.Second, "the dead consumer's 40 notifications reclaimed and acknowledged", func() bool {
		if _, err := w.Step(ctx); err != nil {
			t.Fatal(err)
		}
		return pending("dead") == 0 && pending("live") == 0
	})
	if got := promtest.Value(t, reg, "elang_queue_reclaimed_total", nil); got != 40 {
		t.Fatalf("reclaimed %v notifications, want 40", got)
	}
	for i := 0; i < 5; i++ { // job 2 fails on every step until given up
		if _, err := w.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM elang_jobs WHERE state = 'done'"); n != 39 {
		t.Fatalf("%d jobs done, want 39", n)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_jobs WHERE id = 2 AND state = 'failed' AND attempts = 3"); n != 1 {
		t.Fatal("job 2 was not given up after 3 attempts")
	}
	if attempts[1] != 2 || ran.Load() != 39+3 {
		t.Fatalf("job 1 ran at attempt %d (want 2: the dead worker's was 1), %d runs in all (want 42)", attempts[1], ran.Load())
	}
	if got := promtest.Sum(t, reg, "elang_queue_jobs_total", map[string]string{"outcome": "retry"}); got != 2 {
		t.Fatalf("%v retries, want 2", got)
	}
}

// With Redis down a worker still runs what SQL holds: each step sweeps the jobs
// table and reports the Redis error beside the count.
func TestWorkerRunsJobsWhileRedisIsDown(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var ran atomic.Int64
	w := NewWorker(e.db, e.group(t, "queue", "w1"), func(context.Context, Job) error { ran.Add(1); return nil },
		WorkerOptions{Queues: []string{"mail"}, Batch: 7, Block: time.Millisecond})
	e.srv.Kill()
	e.push(t, "mail", 30)
	n, err := w.Step(ctx)
	if n != 30 || !errors.Is(err, ErrRedis) {
		t.Fatalf("step with Redis down: ran %d, %v; want 30 and ErrRedis", n, err)
	}
	if ran.Load() != 30 || e.count(t, "SELECT count(*) FROM elang_jobs WHERE state = 'done'") != 30 {
		t.Fatalf("ran %d jobs, want 30 done", ran.Load())
	}
}

// Shutting a worker down (its ctx ends) while a job runs: the job that finishes is
// recorded done, the job whose handler gives up with the shutdown and the claimed
// jobs not yet started go back to ready with their attempt not counted; nothing is
// left reserved for a lease to expire.
func TestWorkerShutdownFinishesOrReleases(t *testing.T) {
	e := newEnv(t)
	e.push(t, "mail", 6)
	for _, finish := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan int64, 1)
		reg := prometheus.NewPedanticRegistry()
		w := NewWorker(e.db, e.group(t, "queue", "w1"), func(ctx context.Context, j Job) error {
			started <- j.ID
			<-ctx.Done()
			if finish {
				return nil // it completed its work before noticing the shutdown
			}
			return ctx.Err()
		}, WorkerOptions{Queues: []string{"mail"}, Batch: 3, Block: time.Millisecond, Registerer: reg})
		done := make(chan error, 1)
		go func() { done <- w.Work(ctx) }()
		var id int64
		select {
		case id = <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("no job started")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Work after shutdown: %v", err)
		}
		if n := e.count(t, "SELECT count(*) FROM elang_jobs WHERE state = 'reserved'"); n != 0 {
			t.Fatalf("%d jobs left reserved", n)
		}
		var state string
		var attempts int
		if err := e.db.QueryRow(context.Background(), "SELECT state, attempts FROM elang_jobs WHERE id = $1", id).Scan(&state, &attempts); err != nil {
			t.Fatal(err)
		}
		wantState, wantAttempts, wantReleased := "done", 1, 2.0
		if !finish {
			wantState, wantAttempts, wantReleased = "ready", 0, 3
		}
		if state != wantState || attempts != wantAttempts {
			t.Fatalf("finish=%v: job %d is %s after %d attempts, want %s after %d", finish, id, state, attempts, wantState, wantAttempts)
		}
		if got := promtest.Sum(t, reg, "elang_queue_jobs_total", map[string]string{"outcome": "released"}); got != wantReleased {
			t.Fatalf("finish=%v: %v jobs released, want %v", finish, got, wantReleased)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM elang_jobs WHERE state = 'ready' AND attempts = 0"); n != 5 {
		t.Fatalf("%d jobs ready and never counted as tried, want 5", n)
	}
}
