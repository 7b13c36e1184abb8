package store

import (
	"context"
	"strings"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/redis/go-redis/v9"
)

// redisStore is the store in Redis, through the generated elang scripts; the
// cache clear alone uses SCAN and UNLINK (keyspec.yaml: elang_app's
// extra_commands).
type redisStore struct {
	p   elang.Prefix
	rdb redis.UniversalClient
	s   *elang.Scripts
}

func (r *redisStore) get(ctx context.Context, name string) ([]byte, bool, error) {
	k, err := elang.NewElangCacheKey(r.p, name)
	if err != nil {
		return nil, false, err
	}
	v, err := r.s.ElangCacheGet(ctx, k)
	if err != nil || v == nil {
		return nil, false, err
	}
	return *v, true, nil
}

func (r *redisStore) set(ctx context.Context, name string, value []byte, ttl time.Duration) error {
	k, err := elang.NewElangCacheKey(r.p, name)
	if err != nil {
		return err
	}
	_, err = r.s.ElangCacheSet(ctx, k, elang.ElangCacheSetArgs{Value: value, TTL: ttl})
	return err
}

func (r *redisStore) del(ctx context.Context, name string) (bool, error) {
	k, err := elang.NewElangCacheKey(r.p, name)
	if err != nil {
		return false, err
	}
	return r.s.ElangCacheDelete(ctx, k)
}

// clearBatch runs one SCAN MATCH <prefix>cache:* step and UNLINKs what it
// found that parses as this prefix's cache key. The check matters: a prefix
// may sit inside another ("acme:" and "acme:cache:"), and the other
// deployment's keys match the glob; they never parse as a cache key of this
// one, whose names hold no ':'.
func (r *redisStore) clearBatch(ctx context.Context, cursor uint64, batch int) (uint64, int, error) {
	head := r.p.String() + "cache:"
	keys, next, err := r.rdb.Scan(ctx, cursor, head+"*", int64(batch)).Result()
	if err != nil {
		return cursor, 0, err
	}
	var mine []string
	for _, k := range keys {
		name, ok := strings.CutPrefix(k, head)
		if !ok {
			continue
		}
		if ck, err := elang.NewElangCacheKey(r.p, name); err != nil || ck.String() != k {
			continue
		}
		mine = append(mine, k)
	}
	if len(mine) == 0 {
		return next, 0, nil
	}
	n, err := r.rdb.Unlink(ctx, mine...).Result()
	if err != nil {
		return cursor, 0, err
	}
	return next, int(n), nil
}

func (r *redisStore) acquire(ctx context.Context, name, owner string, lease time.Duration) (bool, time.Duration, error) {
	k, err := elang.NewElangLockKey(r.p, name)
	if err != nil {
		return false, 0, err
	}
	g, err := r.s.ElangLockAcquire(ctx, k, elang.ElangLockAcquireArgs{Owner: owner, Lease: lease})
	if err != nil {
		return false, 0, err
	}
	return g.Acquired, g.TTL, nil
}

func (r *redisStore) refresh(ctx context.Context, name, owner string, lease time.Duration) (Outcome, error) {
	k, err := elang.NewElangLockKey(r.p, name)
	if err != nil {
		return "", err
	}
	return r.s.ElangLockRefresh(ctx, k, elang.ElangLockRefreshArgs{Owner: owner, Lease: lease})
}

func (r *redisStore) release(ctx context.Context, name, owner string) (Outcome, error) {
	k, err := elang.NewElangLockKey(r.p, name)
	if err != nil {
		return "", err
	}
	return r.s.ElangLockRelease(ctx, k, elang.ElangLockReleaseArgs{Owner: owner})
}
