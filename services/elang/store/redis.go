package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/redis/go-redis/v9"
)

// redisStore is the store in Redis, through the generated elang scripts only:
// the cache clear lists no key (elang_cache_clear retires the deployment's
// cache generation), since SCAN would show the key names of every deployment
// on the server.
type redisStore struct {
	p          elang.Prefix
	rdb        redis.UniversalClient
	s          *elang.Scripts
	generation elang.ElangCacheGenerationKey
}

// freshGeneration is a random cache generation token.
func freshGeneration() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (r *redisStore) get(ctx context.Context, name string) ([]byte, bool, error) {
	k, err := elang.NewElangCacheKey(r.p, name)
	if err != nil {
		return nil, false, err
	}
	v, err := r.s.ElangCacheGet(ctx, k, r.generation)
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
	_, err = r.s.ElangCacheSet(ctx, k, r.generation, elang.ElangCacheSetArgs{Value: value, TTL: ttl, Fresh: freshGeneration()})
	return err
}

func (r *redisStore) del(ctx context.Context, name string) (bool, error) {
	k, err := elang.NewElangCacheKey(r.p, name)
	if err != nil {
		return false, err
	}
	return r.s.ElangCacheDelete(ctx, k)
}

// clearBatch retires every cache entry of the prefix in one step: a new
// generation (elang_cache_clear). Nothing is listed or deleted, so it reports
// 0 removed and no further step; the retired entries stay until their TTLs.
func (r *redisStore) clearBatch(ctx context.Context, _ uint64, _ int) (uint64, int, error) {
	_, err := r.s.ElangCacheClear(ctx, r.generation, elang.ElangCacheClearArgs{Fresh: freshGeneration()})
	return 0, 0, err
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
