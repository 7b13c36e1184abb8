package settings_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/luatest"
	luagenrt "github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/msgpackcheck"
	"github.com/hanchat/luagen/services/vm1/settings"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"
)

// snapshot is a settings document as api-backend might keep it.
type snapshot struct {
	Version      int64             `msgpack:"v"`
	MaxMessage   int               `msgpack:"max_msg"`
	Features     map[string]bool   `msgpack:"features"`
	RouteLimits  map[string]uint32 `msgpack:"limits"`
	MaintenUntil time.Time         `msgpack:"maint_until"`
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func harness(t *testing.T) (*luatest.Server, *luatest.Scripter, *settings.Store[snapshot]) {
	t.Helper()
	h := luatest.NewServer(luatest.NewClock(t0))
	sc := h.Scripter()
	scripts, err := vm1.NewScripts(vm1.Clients{DB1: sc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sc.Check(); err != nil {
			t.Errorf("a script broke a rule: %v", err)
		}
	})
	return h, sc, settings.New[snapshot](scripts)
}

func sample() snapshot {
	return snapshot{
		Version: 42, MaxMessage: 4000,
		Features:     map[string]bool{"reactions": true, "voice": false},
		RouteLimits:  map[string]uint32{"messages.send": 20},
		MaintenUntil: t0.Add(time.Hour),
	}
}

// A snapshot reads back as the same typed value for exactly 5 minutes.
func TestSnapshotRoundTripAndTTL(t *testing.T) {
	ctx := context.Background()
	h, _, s := harness(t)
	want := sample()
	if err := s.Put(ctx, 42, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, 42)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != want.Version || got.MaxMessage != want.MaxMessage || !got.MaintenUntil.Equal(want.MaintenUntil) ||
		len(got.Features) != 2 || !got.Features["reactions"] || got.RouteLimits["messages.send"] != 20 {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	key, _ := vm1.NewSettingsSnapshotKey(42)
	if e := h.Keyspace()[key.String()]; e.TTL != 5*time.Minute {
		t.Fatalf("TTL %v, want 5m", e.TTL)
	}
	if _, err := s.Get(ctx, 43); !errors.Is(err, settings.ErrNotFound) {
		t.Fatalf("a version never stored: %v", err)
	}
	h.Clock().Advance(4 * time.Minute)
	// Putting the version again restarts its 5 minutes.
	if err := s.Put(ctx, 42, want); err != nil {
		t.Fatal(err)
	}
	h.Clock().Advance(5 * time.Minute)
	if _, err := s.Get(ctx, 42); err != nil {
		t.Fatalf("at exactly 5 minutes after the last put: %v", err)
	}
	h.Clock().Advance(time.Millisecond)
	if _, err := s.Get(ctx, 42); !errors.Is(err, settings.ErrNotFound) {
		t.Fatalf("after 5 minutes: %v", err)
	}
}

// Too large, a bad version, or a stored value that is not exactly one snapshot:
// clear errors, no panic, no write.
func TestSnapshotBadInputAndCorruptValues(t *testing.T) {
	ctx := context.Background()
	h, sc, s := harness(t)
	big := sample()
	big.Features = map[string]bool{}
	for i := 0; i < 20000; i++ {
		big.Features[fmt.Sprintf("feature-%06d", i)] = true
	}
	runs := len(sc.Results())
	if err := s.Put(ctx, 1, big); !errors.Is(err, settings.ErrTooLarge) {
		t.Fatalf("a snapshot above %d bytes: %v", settings.MaxBytes, err)
	}
	if err := s.Put(ctx, 0, sample()); !errors.Is(err, luagenrt.ErrInvalidKeyPart) {
		t.Fatalf("version 0: %v", err)
	}
	if _, err := s.Get(ctx, -1); !errors.Is(err, luagenrt.ErrInvalidKeyPart) {
		t.Fatalf("version -1: %v", err)
	}
	if n := len(sc.Results()); n != runs || len(h.Keyspace()) != 0 {
		t.Fatalf("refused input ran %d scripts and left %v", n-runs, h.Keyspace())
	}

	good, err := msgpack.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	str, _ := msgpack.Marshal("just a string")
	for name, v := range map[string][]byte{
		"empty":           {},
		"truncated":       good[:len(good)/2],
		"trailing bytes":  append(append([]byte{}, good...), 0xc0),
		"two values":      append(append([]byte{}, good...), good...),
		"a string":        str,
		"invalid code":    {0xc1},
		"huge array head": {0xdd, 0xff, 0xff, 0xff, 0xff},
		"not msgpack":     []byte("{\"v\": 1}"),
	} {
		key, _ := vm1.NewSettingsSnapshotKey(9)
		if _, err := h.Do("SET", key.String(), v, "PX", 60000); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, 9); !errors.Is(err, settings.ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		} else if bytes.Contains([]byte(err.Error()), []byte("just a string")) {
			t.Errorf("%s: the error quotes the stored value: %v", name, err)
		}
	}
}

// A stored value that is not exactly one well-formed MessagePack value within
// MaxBytes is refused by msgpackcheck.Check before any decoding: its error
// matches msgpackcheck.ErrMalformed as well as ErrCorrupt. A well-formed value
// of another shape matches ErrCorrupt only.
func TestDecodeChecksTheShapeWithMsgpackcheck(t *testing.T) {
	good, err := msgpack.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	// One well-formed bin value, MaxBytes+5 bytes long.
	tooLarge, err := msgpack.Marshal(make([]byte, settings.MaxBytes))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":           {},
		"truncated":       good[:len(good)/2],
		"trailing bytes":  append(append([]byte{}, good...), 0xc0),
		"two values":      append(append([]byte{}, good...), good...),
		"invalid code":    {0xc1},
		"huge array head": {0xdd, 0xff, 0xff, 0xff, 0xff},
		"too large":       tooLarge,
	} {
		if _, err := settings.Decode[snapshot](b); !errors.Is(err, settings.ErrCorrupt) || !errors.Is(err, msgpackcheck.ErrMalformed) {
			t.Errorf("%s: %v, want ErrCorrupt and msgpackcheck.ErrMalformed", name, err)
		}
	}
	str, _ := msgpack.Marshal("just a string")
	if _, err := settings.Decode[snapshot](str); !errors.Is(err, settings.ErrCorrupt) || errors.Is(err, msgpackcheck.ErrMalformed) {
		t.Errorf("a well-formed value of another shape: %v", err)
	}
}

// A stored value whose length headers claim millions of entries or gigabytes
// costs no more than a bounded scratch buffer: the claims are checked against
// the value before it is decoded.
func TestDecodeOfALyingLengthAllocatesLittle(t *testing.T) {
	for name, b := range map[string][]byte{
		"features claims 4G entries": {0x81, 0xa8, 'f', 'e', 'a', 't', 'u', 'r', 'e', 's', 0xdf, 0xff, 0xff, 0xff, 0xff},
		"limits claims 4G entries":   {0x81, 0xa6, 'l', 'i', 'm', 'i', 't', 's', 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'x', 0x01},
		"a key claims 4 GB":          {0x81, 0xdb, 0xff, 0xff, 0xff, 0x00, 'v'},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < 10; i++ {
			if _, err := settings.Decode[snapshot](b); !errors.Is(err, settings.ErrCorrupt) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 16<<20 {
			t.Errorf("%s: %d bytes allocated per decode, want at most 16 MiB", name, per)
		}
	}
}

// FuzzDecode: whatever bytes are stored, Decode returns a snapshot or
// ErrCorrupt, and never panics.
func FuzzDecode(f *testing.F) {
	good, _ := msgpack.Marshal(sample())
	f.Add(good)
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xc1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := settings.Decode[snapshot](b); err != nil && !errors.Is(err, settings.ErrCorrupt) {
			t.Fatalf("an error that is not ErrCorrupt: %v", err)
		}
	})
}

// On real Redis: the snapshot round-trips, and every key holds a TTL.
func TestSnapshotOnRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	db1 := srv.Client(vm1.DB1)
	scripts, err := vm1.NewScripts(vm1.Clients{DB1: db1})
	if err != nil {
		t.Fatal(err)
	}
	s := settings.New[snapshot](scripts)
	for v := int64(1); v <= 3; v++ {
		want := sample()
		want.Version = v
		if err := s.Put(ctx, v, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, v)
		if err != nil || got.Version != v || got.MaxMessage != want.MaxMessage {
			t.Fatalf("version %d: %+v %v", v, got, err)
		}
	}
	if _, err := s.Get(ctx, 4); !errors.Is(err, settings.ErrNotFound) {
		t.Fatalf("absent version: %v", err)
	}
	auditTTLs(t, db1)
}

// auditTTLs fails for any key of c's database without a TTL above zero or
// outside vm1's declared patterns.
func auditTTLs(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	n := 0
	for iter.Next(ctx) {
		n++
		k := iter.Val()
		declared := false
		for _, info := range vm1.Keys {
			declared = declared || info.Matches(k)
		}
		if !declared {
			t.Errorf("key %s matches no declared pattern", k)
		}
		if ttl, err := c.PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
			t.Errorf("key %s has no TTL (%v, %v)", k, ttl, err)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("no key to audit: the scenario wrote nothing")
	}
}
