// Package safetytest is what tests of Message Safety (services/vm2/safety)
// share: its clients and caches with registries of their own, the digests its
// keys take, and a wait for wake-ups.
package safetytest

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/hanchat/luagen/services/vm2/safety"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Policy is the active config of the tests' Message Safety.
var Policy = safety.Policy{Generation: 3, TextTTL: 6 * time.Hour, VerdictTTL: 7 * 24 * time.Hour, LinkTTL: 12 * time.Hour, DNSMaxTTL: 900 * time.Second}

// New makes a safety.Client on rdb whose metrics go to a registry of its own.
func New(t testing.TB, rdb redis.Scripter, o safety.Options) (*safety.Client, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	c, err := safety.New(rdb, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

// NewCache makes a safety.Cache on c following p.
func NewCache(t testing.TB, c *safety.Client, p safety.Policy) *safety.Cache {
	t.Helper()
	k, err := safety.NewCache(c, p)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Impatient makes a client give up on a dead server quickly and never retry, as
// Message Safety configures MESSAGE_SAFETY_REDIS_URL's client.
func Impatient(o *redis.Options) {
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	o.MaxRetries = -1
}

// Digest is the SHA-256 hex digest Message Safety's keys take (analysis,
// content, URL and host hashes are computed by the caller).
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// WaitWakeup waits for a wake-up of reason on sub, skipping others, and fails
// the test when none comes within timeout or the subscription closes.
func WaitWakeup(t testing.TB, sub *safety.Subscription, reason safety.WakeReason, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case w, ok := <-sub.C():
			if !ok {
				t.Fatalf("the subscription closed before %s", reason)
			}
			if w.Reason == reason {
				return
			}
		case <-deadline.C:
			t.Fatalf("no %s wake-up within %v", reason, timeout)
		}
	}
}
