package legacystub_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/vm1/legacystub"
)

// On real Redis, a stub task lives exactly its TTL from its creation, to the
// millisecond of the server's clock, and that TTL exceeds the poll and recovery
// budget keyspec.yaml declares for the stub's task (its ttl exceeds, seed 000
// §7, §13); polls count without moving the expiry.
func TestStubTaskTTLExceedsThePollAndRecoveryBudgetOnRedis(t *testing.T) {
	t.Parallel()
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var legacy *keyspec.Legacy
	for _, db := range spec.Instance("vm1").DBs {
		if db.Index == vm1.DB2 {
			legacy = db.Legacy
		}
	}
	if legacy == nil || legacy.State != keyspec.LegacyAlive {
		t.Fatalf("vm1 DB2 is not an alive legacy stub in keyspec.yaml: %+v", legacy)
	}
	poll, recovery := stubBudget(t)
	budget := poll + recovery
	if budget <= 0 || vm1.LegacySafetyTaskTTL <= budget {
		t.Fatalf("the task TTL %s does not exceed the poll + recovery budget %s", vm1.LegacySafetyTaskTTL, budget)
	}

	ctx := context.Background()
	srv := redistest.Start(t)
	db2 := srv.Client(vm1.DB2)
	scripts, err := vm1.NewScripts(vm1.Clients{DB2: db2})
	if err != nil {
		t.Fatal(err)
	}
	stub := legacystub.New(scripts)
	taskID := uuid.NewString()
	key, err := vm1.NewLegacySafetyTaskKey(taskID)
	if err != nil {
		t.Fatal(err)
	}
	expiry := redistest.ExpectTTL(t, db2, key.String(), vm1.LegacySafetyTaskTTL, func() {
		if _, err := stub.Create(ctx, taskID); err != nil {
			t.Fatal(err)
		}
	})
	created, err := redistest.ServerMillis(ctx, db2)
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Duration(expiry-created) * time.Millisecond; left <= budget {
		t.Fatalf("right after creation the task has %s left, not more than the budget %s", left, budget)
	}
	for i := int64(1); i <= 50; i++ {
		p, err := stub.Poll(ctx, taskID)
		if err != nil || p.Polls != i {
			t.Fatalf("poll %d: %+v %v", i, p, err)
		}
	}
	if after, err := db2.Do(ctx, "pexpiretime", key.String()).Int64(); err != nil || after != expiry {
		t.Fatalf("after 50 polls the task expires at %d (%v), want %d: polls must not move it", after, err, expiry)
	}
}
