package coord_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/vm1/coord"
)

// On real Redis, each of the three locks is taken and extended for exactly 30 s
// (seed 000 §6), to the millisecond of the server's clock.
func TestLockTTLIsThirtySecondsOnRedis(t *testing.T) {
	const seedTTL = 30 * time.Second
	if coord.MaxTTL != seedTTL {
		t.Fatalf("keyspec.yaml gives the lock keys %s, the seed 30s", coord.MaxTTL)
	}
	ctx := context.Background()
	srv := redistest.Start(t)
	db1 := srv.Client(vm1.DB1)
	l := locker(t, db1)
	recovery, err := coord.SafetyRecovery(uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	delivery, err := coord.Delivery(uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	refresh, err := coord.SettingsRefresh("api-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []coord.Name{recovery, delivery, refresh} {
		var lk *coord.Lock
		redistest.ExpectTTL(t, db1, name.Key(), seedTTL, func() {
			if lk, err = l.Obtain(ctx, name, coord.Options{}); err != nil {
				t.Fatal(err)
			}
		})
		redistest.ExpectTTL(t, db1, name.Key(), seedTTL, func() {
			if err := lk.Extend(ctx); err != nil {
				t.Fatal(err)
			}
		})
		if err := lk.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
