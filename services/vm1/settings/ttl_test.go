package settings_test

import (
	"context"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/vm1/settings"
)

// On real Redis, a snapshot lives exactly 5 minutes from its Put (seed 000 §6), to
// the millisecond of the server's clock, and a Put of the same version restarts
// the 5 minutes.
func TestSnapshotTTLIsFiveMinutesOnRedis(t *testing.T) {
	const seedTTL = 5 * time.Minute
	if vm1.SettingsSnapshotTTL != seedTTL {
		t.Fatalf("keyspec.yaml gives han:settings:snapshot:* a TTL of %s, the seed 5m", vm1.SettingsSnapshotTTL)
	}
	ctx := context.Background()
	srv := redistest.Start(t)
	db1 := srv.Client(vm1.DB1)
	scripts, err := vm1.NewScripts(vm1.Clients{DB1: db1})
	if err != nil {
		t.Fatal(err)
	}
	s := settings.New[snapshot](scripts)
	key, err := vm1.NewSettingsSnapshotKey(7)
	if err != nil {
		t.Fatal(err)
	}
	put := func() {
		if err := s.Put(ctx, 7, sample()); err != nil {
			t.Fatal(err)
		}
	}
	first := redistest.ExpectTTL(t, db1, key.String(), seedTTL, put)
	// The server's clock moves on; the second Put must move the expiry with it.
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool {
		now, err := redistest.ServerMillis(ctx, db1)
		return err == nil && now > first-seedTTL.Milliseconds()+2
	}) {
		t.Fatal("the server's clock did not move")
	}
	if second := redistest.ExpectTTL(t, db1, key.String(), seedTTL, put); second <= first {
		t.Fatalf("a second Put left the expiry at %d (first %d)", second, first)
	}
	if pttl := db1.PTTL(ctx, key.String()).Val(); pttl > seedTTL || pttl < seedTTL-time.Second {
		t.Fatalf("PTTL %s right after the Put, want at most 5m and within a second of it", pttl)
	}
}
