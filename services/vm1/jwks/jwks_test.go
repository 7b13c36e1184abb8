package jwks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// On the harness's fake clock the marker lives exactly 30 s from the first
// miss, marking again does not restart it (a kid marked every few seconds is
// still looked up again every 30 s), and the kid enters the key only hashed.
func TestNegativeMarkerLives30Seconds(t *testing.T) {
	ctx := context.Background()
	h := luatest.NewServer(luatest.NewClock(t0))
	sc := h.Scripter()
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: sc})
	if err != nil {
		t.Fatal(err)
	}
	c := New(scripts)
	const kid = "2024-rotated:key{1}*"
	if missing, err := c.KnownMissing(ctx, kid); err != nil || missing {
		t.Fatalf("before marking: %v %v", missing, err)
	}
	if created, err := c.MarkMissing(ctx, kid); err != nil || !created {
		t.Fatalf("mark: %v %v", created, err)
	}
	// An attacker marks the kid again every 10 s: the marker still ends 30 s
	// after the first miss.
	for i := 1; i <= 2; i++ {
		h.Clock().Advance(10 * time.Second)
		if created, err := c.MarkMissing(ctx, kid); err != nil || created {
			t.Fatalf("mark again after %d0 s: %v %v", i, created, err)
		}
		for k, e := range h.Keyspace() {
			if strings.Contains(k, "rotated") || e.TTL != time.Duration(30-10*i)*time.Second {
				t.Fatalf("key %s (TTL %v): want the kid's hash and what is left of the first 30 s", k, e.TTL)
			}
		}
	}
	h.Clock().Advance(10 * time.Second)
	if missing, _ := c.KnownMissing(ctx, kid); !missing {
		t.Fatal("gone before 30 s")
	}
	h.Clock().Advance(time.Millisecond)
	if missing, _ := c.KnownMissing(ctx, kid); missing {
		t.Fatal("still there 30 s after the first miss although marked again")
	}
	// The next miss marks it afresh.
	if created, err := c.MarkMissing(ctx, kid); err != nil || !created {
		t.Fatalf("mark after expiry: %v %v", created, err)
	}
	// A marker left without expiry by another writer gets one.
	stray := vm1.NewAPIJWKSNegativeKey("stray-kid")
	if _, err := h.Do("SET", stray.String(), "1"); err != nil {
		t.Fatal(err)
	}
	if created, err := c.MarkMissing(ctx, "stray-kid"); err != nil || created {
		t.Fatalf("mark a stray marker: %v %v", created, err)
	}
	if ttl := h.Keyspace()[stray.String()].TTL; ttl != 30*time.Second {
		t.Fatalf("a stray marker's TTL is %v, want 30 s", ttl)
	}
	if err := sc.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidKIDsAreRefused(t *testing.T) {
	scripts, _ := vm1.NewScripts(vm1.Clients{})
	c := New(scripts)
	for _, kid := range []string{"", strings.Repeat("k", MaxKIDBytes+1)} {
		if _, err := c.MarkMissing(context.Background(), kid); !errors.Is(err, ErrInvalidKID) {
			t.Errorf("mark %d bytes: %v", len(kid), err)
		}
		if _, err := c.KnownMissing(context.Background(), kid); !errors.Is(err, ErrInvalidKID) {
			t.Errorf("check %d bytes: %v", len(kid), err)
		}
	}
	// Without scripts, a valid kid fails with runtime.ErrNoClient, never a panic.
	if _, err := New(nil).KnownMissing(context.Background(), "kid-1"); !errors.Is(err, runtime.ErrNoClient) {
		t.Errorf("nil scripts: %v, want ErrNoClient", err)
	}
}

// On real Redis: the check runs as EVALSHA_RO, the marker has its TTL, and a
// stopped server is an error, not "not missing".
func TestNegativeMarkerOnRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	db0 := srv.Client(vm1.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.DialerRetries = 1 })
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: db0})
	if err != nil {
		t.Fatal(err)
	}
	c := New(scripts)
	if _, err := c.MarkMissing(ctx, "kid-1"); err != nil {
		t.Fatal(err)
	}
	if missing, err := c.KnownMissing(ctx, "kid-1"); err != nil || !missing {
		t.Fatalf("check: %v %v", missing, err)
	}
	key := vm1.NewAPIJWKSNegativeKey("kid-1")
	if ttl := db0.PTTL(ctx, key.String()).Val(); ttl <= 29*time.Second || ttl > 30*time.Second {
		t.Fatalf("marker TTL %v", ttl)
	}
	// Marking again leaves the expiry alone (SET NX PX, not SET PX GET).
	if err := db0.PExpire(ctx, key.String(), 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if created, err := c.MarkMissing(ctx, "kid-1"); err != nil || created {
		t.Fatalf("mark again: %v %v", created, err)
	}
	if ttl := db0.PTTL(ctx, key.String()).Val(); ttl <= 0 || ttl > 5*time.Second {
		t.Fatalf("marking again moved the expiry: TTL %v, want at most the 5 s left", ttl)
	}
	srv.Kill()
	if _, err := c.KnownMissing(ctx, "kid-1"); err == nil {
		t.Fatal("a stopped Redis read as an answer")
	}
}
