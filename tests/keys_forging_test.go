package tests

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/runtime"
)

// forgedLock embeds a real lock key but answers another name from String.
type forgedLock struct{ vm1.CoordLockDeliveryKey }

func (forgedLock) String() string { return "han:api:idem:message-send:x:y" }

// A KEYS position accepts only the key types it declares, built by their
// builders: not another type that embeds one, not a pointer, not nil.
func TestWrappersRefuseKeysTheyDoNotDeclare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, sc, scripts := scripttest.VM1Harness(t)
	real, err := vm1.NewCoordLockDeliveryKey(uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	var nilPtr *vm1.CoordLockDeliveryKey
	for name, lock := range map[string]vm1.LockReleaseLock{
		"embedding type": forgedLock{real},
		"nil pointer":    nilPtr,
		"pointer":        &real,
		"nil":            nil,
		"zero value":     vm1.CoordLockDeliveryKey{},
	} {
		_, err := scripts.LockRelease(ctx, lock, vm1.LockReleaseArgs{Owner: scripttest.Nonce(t)})
		if !errors.Is(err, runtime.ErrInvalidArg) {
			t.Errorf("%s: err = %v, want ErrInvalidArg", name, err)
		}
	}
	if n := len(sc.Results()); n != 0 {
		t.Fatalf("a refused key reached Redis: %d script runs", n)
	}
	if _, err := scripts.LockAcquire(ctx, real, mustFence(t, real), vm1.LockAcquireArgs{Owner: scripttest.Nonce(t), LockTTL: time.Second}); err != nil {
		t.Fatalf("the real key: %v", err)
	}
	if n := len(sc.Results()); n != 1 {
		t.Fatalf("the real key: %d script runs, want 1", n)
	}
}

func mustFence(t *testing.T, lock vm1.CoordLockDeliveryKey) vm1.CoordFenceDeliveryKey {
	t.Helper()
	// The fence of a lock names the same message; rebuild it from the lock's id.
	id := lock.String()[len("han:coord:lock:delivery:"):]
	f, err := vm1.NewCoordFenceDeliveryKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
