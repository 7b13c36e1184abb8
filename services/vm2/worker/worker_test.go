package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/hanchat/luagen/services/vm2/taskqueue"
	"github.com/hanchat/luagen/services/vm2/waker"
	"github.com/hanchat/luagen/services/vm2/worker"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// counter is the value of the series name{labels} in reg (0 when absent).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matches(m, labels) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				}
			}
		}
	}
	return 0
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := labels[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}

// handled counts how often the handler ran for each task.
type handled struct {
	mu     sync.Mutex
	counts map[string]int
}

func (h *handled) handle(_ context.Context, t taskqueue.Task) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[t.ID]++
	return nil
}

// check fails unless every id was handled exactly once and nothing else was.
func (h *handled) check(t *testing.T, ids []string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		if h.counts[id] != 1 {
			t.Errorf("task %s handled %d times, want exactly once", id, h.counts[id])
		}
	}
	if len(h.counts) != len(ids) {
		t.Errorf("%d tasks handled, want %d", len(h.counts), len(ids))
	}
}

func (h *handled) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.counts)
}

// A Redis outage never stops the PostgreSQL claim (seed 004 §6, §8): six workers
// with a wake-up subscription keep claiming while Redis is up, hung (SIGSTOP:
// connections open, no answers), killed and restarted empty, and every task of
// every phase is handled exactly once and marked done once.
func TestClaimLoopSurvivesRedisHungStoppedAndRestarted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	q, pool := safetytest.TaskQueue(t)
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	reg := prometheus.NewRegistry()
	c, err := safetyredis.New(rdb, safetyredis.Options{Registerer: reg, PublishTimeout: 200 * time.Millisecond, RetryInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wk, err := waker.New(c)
	if err != nil {
		t.Fatal(err)
	}
	h := &handled{counts: map[string]int{}}
	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	for i := 0; i < 6; i++ {
		w, err := worker.New(q, wk, worker.Options{Batch: 8, Lease: 5 * time.Second, PollInterval: 150 * time.Millisecond, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(runCtx, h.handle); !errors.Is(err, context.Canceled) {
				t.Errorf("Run: %v", err)
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()

	var all []string
	phase := func(name string, n int) {
		t.Helper()
		ids := safetytest.Enqueue(t, q, pool, n)
		all = append(all, ids...)
		r, err := wk.Publish(ctx, safetyrecord.Wakeup{Reason: safetyrecord.WakeTasksReady})
		if err != nil {
			t.Fatalf("%s: publish: %v", name, err)
		}
		if !redistest.WaitFor(ctx, 30*time.Second, func() bool { return h.total() >= len(all) }) {
			t.Fatalf("%s: %d of %d tasks handled (wake-up sent: %v)", name, h.total(), len(all), r.Sent)
		}
		t.Logf("%s: %d tasks handled; wake-up sent %v", name, len(all), r.Sent)
	}
	phase("Redis up", 150)
	srv.Pause()
	phase("Redis hung", 150)
	srv.Resume()
	srv.Kill()
	phase("Redis stopped", 150)
	srv.Restart()
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return rdb.Ping(ctx).Err() == nil }) {
		t.Fatal("Redis did not come back")
	}
	phase("Redis restarted", 150)

	stop()
	wg.Wait()
	h.check(t, all)
	var done, claimedOnce int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE generation = 1 AND attempts = 1) FROM safety_tasks`).Scan(&done, &claimedOnce); err != nil {
		t.Fatal(err)
	}
	if done != len(all) || claimedOnce != len(all) {
		t.Fatalf("%d tasks done and %d claimed exactly once, want %d of each", done, claimedOnce, len(all))
	}
	if got := counter(t, reg, "han_safety_tasks_finished_total", map[string]string{"result": "done"}); got != float64(len(all)) {
		t.Fatalf("han_safety_tasks_finished_total{result=done} %v, want %d", got, len(all))
	}
	if counter(t, reg, "han_safety_wakeup_published_total", map[string]string{"result": "dropped"}) < 1 {
		t.Fatal("no wake-up was dropped: Redis was never unavailable to the publisher")
	}
}

// A wake-up ends the wait: a worker polling only once a minute (the longest
// fallback) claims a task well before its next poll when a wake-up arrives.
func TestWakeupShortensThePoll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, pool := safetytest.TaskQueue(t)
	srv := redistest.Start(t)
	rdb := srv.Client(0)
	reg := prometheus.NewRegistry()
	c, err := safetyredis.New(rdb, safetyredis.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	wk, err := waker.New(c)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(q, wk, worker.Options{PollInterval: worker.MaxPollInterval, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	h := &handled{counts: map[string]int{}}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx, h.handle) }()
	defer func() { stop(); <-done }()
	// The first claim has run and the subscription (whose own notification
	// triggers one more claim) is made: from now on only a wake-up or the poll a
	// minute later can claim.
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		return counter(t, reg, "han_safety_task_claims_total", map[string]string{"trigger": "wakeup"}) >= 1 &&
			counter(t, reg, "han_safety_wakeup_received_total", map[string]string{"result": "subscribed"}) >= 1
	}) {
		t.Fatal("the worker did not start and subscribe")
	}
	before := counter(t, reg, "han_safety_task_claims_total", map[string]string{"trigger": "wakeup"})
	ids := safetytest.Enqueue(t, q, pool, 3)
	if r, err := wk.Publish(ctx, safetyrecord.Wakeup{Reason: safetyrecord.WakeTasksReady}); err != nil || r.Receivers != 1 {
		t.Fatalf("publish: %+v %v", r, err)
	}
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return h.total() == len(ids) }) {
		t.Fatalf("%d of %d tasks handled 10 s after the wake-up", h.total(), len(ids))
	}
	h.check(t, ids)
	if after := counter(t, reg, "han_safety_task_claims_total", map[string]string{"trigger": "wakeup"}); after != before+1 {
		t.Fatalf("wake-up claims %v then %v, want one more", before, after)
	}
	if got := counter(t, reg, "han_safety_task_claims_total", map[string]string{"trigger": "interval"}); got != 0 {
		t.Fatalf("%v fallback polls within the test: the wake-up was not what claimed", got)
	}
}
