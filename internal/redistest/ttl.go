package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ServerMillis is the server's clock (TIME) in Unix milliseconds, rounded down as
// Redis rounds it for expiries.
func ServerMillis(ctx context.Context, c redis.Cmdable) (int64, error) {
	now, err := c.Time(ctx).Result()
	if err != nil {
		return 0, err
	}
	return now.UnixMilli(), nil
}

// Doer is a client that can also send any command (a *redis.Client, a Ring, a
// cluster client).
type Doer interface {
	redis.Cmdable
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// ExpectTTL runs write, which must set key's expiry to ttl after the server's
// clock at the moment it runs, and fails t unless the key's absolute expiry
// (PEXPIRETIME) lies between the server's clock read just before write plus ttl
// and the clock read just after it plus ttl: an exact bound, however long write
// took. It returns the expiry in Unix milliseconds.
func ExpectTTL(t testing.TB, c Doer, key string, ttl time.Duration, write func()) int64 {
	t.Helper()
	ctx := context.Background()
	before, err := ServerMillis(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	write()
	after, err := ServerMillis(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	expiry, err := c.Do(ctx, "pexpiretime", key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	ms := ttl.Milliseconds()
	if expiry < before+ms || expiry > after+ms {
		t.Errorf("%s expires at %d: want %s after the write, within [%d, %d] (the server's clock %d..%d plus %d ms)",
			key, expiry, ttl, before+ms, after+ms, before, after, ms)
	}
	return expiry
}
