package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hanchat/luagen/examples/jobqueue/internal/redisgen/jobs"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/luatest"
)

// onLuatest is a queue named "emails" on luatest's in-memory Redis, its clock
// the test's. Every run is held to the spec (ScripterFor): the keys each script
// touched are its declared ones, the lease has its TTL, the ttl none keys need
// none, and the ready list holds no more than its max_len; the test fails at
// its end when a run broke one.
func onLuatest(t *testing.T) (*Queue, *luatest.Server) {
	t.Helper()
	spec, err := keyspec.Load("keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	srv := luatest.NewServer(luatest.NewClock(time.Unix(1_800_000_000, 0)))
	sc := srv.ScripterFor(spec, srcs, "")
	scripts, err := jobs.NewScripts(jobs.Clients{DB0: sc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sc.Check(); err != nil {
			t.Errorf("a script broke the spec: %v", err)
		}
	})
	q, err := NewQueue(scripts, "emails")
	if err != nil {
		t.Fatal(err)
	}
	return q, srv
}

// id is the n-th test job's UUID.
func id(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// Jobs come out oldest first, each under a lease of exactly the spec's 30s;
// complete deletes the job and its lease; what is left is still there a
// month later, without a TTL.
func TestJobsRunInOrderAndStay(t *testing.T) {
	ctx := context.Background()
	q, srv := onLuatest(t)
	for n := 1; n <= 3; n++ {
		if stored, err := q.Enqueue(ctx, id(n), []byte(fmt.Sprintf("mail %d", n)), 0); err != nil || !stored {
			t.Fatalf("enqueue %d: %v %v", n, stored, err)
		}
	}
	if stored, err := q.Enqueue(ctx, id(1), []byte("again"), 0); err != nil || stored {
		t.Fatalf("enqueue of a stored id: %v %v, want false", stored, err)
	}
	job, ok, err := q.Claim(ctx, "w1")
	if err != nil || !ok || job.ID != id(1) || string(job.Payload) != "mail 1" || job.Attempts != 1 {
		t.Fatalf("claim: %+v %v %v", job, ok, err)
	}
	keys := srv.Keyspace()
	lease := "jq:emails:job:" + id(1) + ":lease"
	if keys[lease].String != "w1" || keys[lease].TTL != jobs.LeaseTTL || jobs.LeaseTTL != 30*time.Second {
		t.Fatalf("the lease: %+v (LeaseTTL %v)", keys[lease], jobs.LeaseTTL)
	}
	if err := q.Complete(ctx, job.ID, "w1"); err != nil {
		t.Fatal(err)
	}
	srv.Clock().Advance(30 * 24 * time.Hour)
	keys = srv.Keyspace()
	if _, ok := keys["jq:emails:job:"+id(1)]; ok {
		t.Fatal("a completed job is still stored")
	}
	if _, ok := keys[lease]; ok {
		t.Fatal("a completed job's lease is still there")
	}
	ready := keys["jq:emails:ready"]
	if len(ready.List) != 2 || ready.List[0] != id(2) || ready.List[1] != id(3) || ready.TTL != luatest.NoTTL {
		t.Fatalf("the ready list a month later: %+v", ready)
	}
	for _, n := range []int{2, 3} {
		if j := keys["jq:emails:job:"+id(n)]; j.Hash["state"] != "ready" || j.Hash["payload"] != fmt.Sprintf("mail %d", n) || j.TTL != luatest.NoTTL {
			t.Fatalf("job %d a month later: %+v", n, j)
		}
	}
}

// A delayed job is ready at its due time to the millisecond, not before.
func TestDelayedJobIsReadyWhenDue(t *testing.T) {
	ctx := context.Background()
	q, srv := onLuatest(t)
	if _, err := q.Enqueue(ctx, id(1), []byte("later"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := q.Claim(ctx, "w1"); err != nil || ok {
		t.Fatalf("claim before the job is due: %v %v", ok, err)
	}
	srv.Clock().Advance(10*time.Second - time.Millisecond)
	if promoted, _, err := q.Maintain(ctx, 100); err != nil || promoted != 0 {
		t.Fatalf("1ms before due: promoted %d, %v", promoted, err)
	}
	srv.Clock().Advance(time.Millisecond)
	if promoted, _, err := q.Maintain(ctx, 100); err != nil || promoted != 1 {
		t.Fatalf("at the due time: promoted %d, %v", promoted, err)
	}
	if job, ok, err := q.Claim(ctx, "w1"); err != nil || !ok || job.ID != id(1) {
		t.Fatalf("claim when due: %+v %v %v", job, ok, err)
	}
	if z := srv.Keyspace()["jq:emails:delayed"]; len(z.ZSet) != 0 {
		t.Fatalf("the schedule still holds %v", z.ZSet)
	}
}

// A worker that stops holding its job loses it when the lease runs out: reap
// puts the job back (not at the deadline itself, where the lease still
// exists, but 1ms after), the first worker may no longer complete it, and the
// next worker's claim is its second attempt.
func TestExpiredLeaseGoesBackToTheQueue(t *testing.T) {
	ctx := context.Background()
	q, srv := onLuatest(t)
	if _, err := q.Enqueue(ctx, id(1), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := q.Claim(ctx, "w1"); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	srv.Clock().Advance(jobs.LeaseTTL)
	if _, requeued, err := q.Maintain(ctx, 100); err != nil || requeued != 0 {
		t.Fatalf("at the lease's deadline: requeued %d, %v", requeued, err)
	}
	if err := q.Complete(ctx, id(1), "w2"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("complete by a worker without the lease: %v, want ErrNotOwner", err)
	}
	srv.Clock().Advance(time.Millisecond)
	if _, requeued, err := q.Maintain(ctx, 100); err != nil || requeued != 1 {
		t.Fatalf("1ms past the deadline: requeued %d, %v", requeued, err)
	}
	if err := q.Complete(ctx, id(1), "w1"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("complete after the lease ran out: %v, want ErrNotOwner", err)
	}
	job, ok, err := q.Claim(ctx, "w2")
	if err != nil || !ok || job.ID != id(1) || job.Attempts != 2 {
		t.Fatalf("second claim: %+v %v %v", job, ok, err)
	}
	if err := q.Complete(ctx, id(1), "w2"); err != nil {
		t.Fatal(err)
	}
}

// The ready list's bound is the spec's max_len: a full queue refuses a job,
// and writes nothing for it.
func TestFullQueueRefusesAJob(t *testing.T) {
	ctx := context.Background()
	q, srv := onLuatest(t)
	ids := make([]any, 0, jobs.ReadyMaxLen+2)
	ids = append(ids, "RPUSH", "jq:emails:ready")
	for n := range jobs.ReadyMaxLen {
		ids = append(ids, id(n+100))
	}
	if _, err := srv.Do(ids...); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, id(1), []byte("x"), 0); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("enqueue on a full queue: %v, want ErrQueueFull", err)
	}
	if _, ok := srv.Keyspace()["jq:emails:job:"+id(1)]; ok {
		t.Fatal("a refused job was stored")
	}
}

// Producers and workers at once: 8 producers enqueue 50 jobs each while 8
// workers claim and complete until all 400 are done; every job is run
// exactly once and nothing is left.
func TestConcurrentProducersAndWorkers(t *testing.T) {
	ctx := context.Background()
	q, srv := onLuatest(t)
	const producers, each, workers = 8, 50, 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		runs = map[string]int{}
		done = make(chan struct{})
	)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := q.Enqueue(ctx, id(p*each+i), []byte("x"), 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var workersWG sync.WaitGroup
	for w := range workers {
		workersWG.Add(1)
		go func() {
			defer workersWG.Done()
			name := fmt.Sprintf("w%d", w)
			for {
				// Read before the claim: once every job was enqueued, an
				// empty claim means none is left.
				var finished bool
				select {
				case <-done:
					finished = true
				default:
				}
				job, ok, err := q.Claim(ctx, name)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					if finished {
						return
					}
					continue
				}
				mu.Lock()
				runs[job.ID]++
				mu.Unlock()
				if err := q.Complete(ctx, job.ID, name); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	workersWG.Wait()
	if len(runs) != producers*each {
		t.Fatalf("%d distinct jobs ran, want %d", len(runs), producers*each)
	}
	for j, n := range runs {
		if n != 1 {
			t.Fatalf("job %s ran %d times", j, n)
		}
	}
	if left := srv.Keyspace(); len(left) != 0 {
		t.Fatalf("keys left after every job completed: %d", len(left))
	}
}
