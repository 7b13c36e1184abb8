package tests

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	guuid "github.com/google/uuid"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// nonce is a fresh random token (owner tokens, rate-limit nonces).
func nonce(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// uuid is a fresh random canonical UUID.
func uuid(testing.TB) string { return guuid.NewString() }

// vm1Server starts a redis-server and returns vm1's scripts on its DB0 and DB1.
func vm1Server(t *testing.T) (*redistest.Server, *vm1.Scripts, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	db0 := srv.Client(vm1.DB0)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: db0, DB1: srv.Client(vm1.DB1), DB2: srv.Client(vm1.DB2)})
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.Preload(context.Background(), db0, vm1.AllScripts()...); err != nil {
		t.Fatal(err)
	}
	return srv, scripts, db0
}

// redisNow is the server's clock in ms.
func redisNow(t testing.TB, c *redis.Client) time.Time {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// auditTTLs fails the test for any key in c's database without a TTL or outside
// every declared pattern of vm1.
func auditTTLs(t *testing.T, c *redis.Client, keys []runtime.KeyInfo) {
	t.Helper()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		declared := false
		for _, info := range keys {
			if info.Matches(k) {
				declared = true
			}
		}
		if !declared {
			t.Errorf("key %s matches no declared pattern", k)
		}
		if ttl, err := c.PTTL(ctx, k).Result(); err != nil || ttl < 0 {
			t.Errorf("key %s has no TTL (%v, %v)", k, ttl, err)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
}

// testHMACKey hashes user-controlled values in tests; a real service reads its secret from config.
var testHMACKey, _ = runtime.NewHMACKey([]byte("test-only secret, 32 bytes or more, never in production"))

func mustHMAC(t testing.TB, v string) runtime.HMAC {
	t.Helper()
	return testHMACKey.Sum(v)
}
