package taskqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/services/vm2/taskqueue"
)

// A task whose lease ran out is claimed again by another worker, with a higher
// generation; the first claim can then neither complete nor release it.
func TestTaskLeaseFencesAStaleClaim(t *testing.T) {
	ctx := context.Background()
	q, pool := safetytest.TaskQueue(t)
	ids := safetytest.Enqueue(t, q, pool, 1)
	first, err := q.Claim(ctx, "worker-a", 10, 50*time.Millisecond)
	if err != nil || len(first) != 1 || first[0].ID != ids[0] || first[0].Generation != 1 {
		t.Fatalf("first claim: %+v %v", first, err)
	}
	if again, err := q.Claim(ctx, "worker-b", 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("a claim during the lease: %+v %v", again, err)
	}
	var second []taskqueue.Task
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		second, err = q.Claim(ctx, "worker-b", 10, time.Minute)
		return err == nil && len(second) == 1
	}) {
		t.Fatalf("the task was not claimed again after its lease: %v", err)
	}
	if second[0].Generation != 2 || second[0].Attempts != 2 {
		t.Fatalf("second claim: %+v", second[0])
	}
	for name, f := range map[string]func(context.Context, taskqueue.Task) error{"complete": q.Complete, "release": q.Release} {
		if err := f(ctx, first[0]); !errors.Is(err, taskqueue.ErrLeaseLost) {
			t.Errorf("the stale claim's %s: %v", name, err)
		}
	}
	if err := q.Extend(ctx, first[0], time.Minute); !errors.Is(err, taskqueue.ErrLeaseLost) {
		t.Errorf("the stale claim's extend: %v", err)
	}
	if err := q.Complete(ctx, second[0]); err != nil {
		t.Fatal(err)
	}
	if more, err := q.Claim(ctx, "worker-c", 10, time.Minute); err != nil || len(more) != 0 {
		t.Fatalf("a done task was claimed: %+v %v", more, err)
	}
}

// Enqueue refuses a task that is not one (ids that are not UUIDs, an unknown
// kind) and writes nothing for it; a task queued twice is one task.
func TestEnqueueRefusesBadTasksAndKeepsTheFirst(t *testing.T) {
	ctx := context.Background()
	q, pool := safetytest.TaskQueue(t)
	good := taskqueue.NewTask{ID: uuid.NewString(), Kind: taskqueue.KindText, SubjectID: uuid.NewString()}
	for name, bad := range map[string]taskqueue.NewTask{
		"task id":    {ID: "42", Kind: taskqueue.KindText, SubjectID: good.SubjectID},
		"subject id": {ID: good.ID, Kind: taskqueue.KindText, SubjectID: "message 7"},
		"kind":       {ID: good.ID, Kind: "video", SubjectID: good.SubjectID},
	} {
		if err := q.Enqueue(ctx, pool, bad); err == nil {
			t.Errorf("a bad %s: accepted", name)
		}
	}
	for range 2 {
		if err := q.Enqueue(ctx, pool, good); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM safety_tasks").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d tasks queued (%v), want 1", n, err)
	}
}
