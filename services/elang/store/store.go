// Package store is where one Elang deployment keeps its cache entries and
// named locks (Elang Redis doc, seed 003: "cache and locks"): its Redis
// (NewRedis), or, when the application has no REDIS_URL, a private directory
// on this host (NewLocal).
//
// The local store is a fallback for a single host. Processes of that host see
// the same entries and locks (a lock is exclusive among them), but nothing is
// shared with, or coordinated across, other hosts: two hosts running on local
// stores each believe they hold the same lock. Run every host that shares work
// on Redis.
//
// An expired entry or lock reads as absent; its file stays until it is
// written again, deleted, released or cleared (Cache.Clear removes every
// cache file of the prefix), so the directory holds at most one file per name
// in use.
//
// Sessions and rate limits have no local store: they need the Redis, and
// report its failures (services/elang/session, services/elang/ratelimit).
//
// Both stores keep the deployment prefix: a store of another prefix, on the
// same Redis or in the same directory, never sees these entries or locks.
// services/elang/cache and services/elang/lock are the APIs on top.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/redis/go-redis/v9"
)

// ErrInvalid: a name, a value, a TTL or a lease the store cannot take, refused
// before any I/O.
var ErrInvalid = errors.New("store: invalid argument")

// MaxValueBytes is the largest cache value (keyspec.yaml elang_cache_set's
// value argument; the stored entry holds its generation too).
const MaxValueBytes = 1 << 20

// MaxTTL is the longest cache TTL (keyspec.yaml elang_cache: clamped, max 30d).
const MaxTTL = elang.ElangCacheMaxTTL

// MaxLease is the longest lock lease (keyspec.yaml elang_lock: max 10m).
const MaxLease = 10 * time.Minute

// MaxLockNameBytes bounds a lock's name; the key holds only its SHA-256.
const MaxLockNameBytes = 512

// Outcome is what a refresh or release found: elang.LockOutcomeOk (it was the
// owner's), elang.LockOutcomeExpired (no lock: the lease ran out) or
// elang.LockOutcomeOtherOwner (another owner holds it; untouched).
type Outcome = elang.LockOutcome

// backend is what both stores do.
type backend interface {
	get(ctx context.Context, name string) ([]byte, bool, error)
	set(ctx context.Context, name string, value []byte, ttl time.Duration) error
	del(ctx context.Context, name string) (bool, error)
	clearBatch(ctx context.Context, cursor uint64, batch int) (uint64, int, error)
	acquire(ctx context.Context, name, owner string, lease time.Duration) (bool, time.Duration, error)
	refresh(ctx context.Context, name, owner string, lease time.Duration) (Outcome, error)
	release(ctx context.Context, name, owner string) (Outcome, error)
}

// Store holds a deployment's cache entries and locks, in Redis or in a local
// directory. It is safe for concurrent use.
type Store struct {
	prefix elang.Prefix
	local  bool
	b      backend
}

// Prefix is the deployment prefix the store keeps to.
func (s *Store) Prefix() elang.Prefix { return s.prefix }

// Local reports whether the store is the local directory (one host only).
func (s *Store) Local() bool { return s.local }

// Kind is "redis" or "local", for logs and metric labels.
func (s *Store) Kind() string {
	if s.local {
		return "local"
	}
	return "redis"
}

// Open is the store an application configures: Redis at redisURL (the
// deployment's REDIS_URL) or, when redisURL is empty, the private directory
// dir on this host. An error never shows the URL's password.
func Open(redisURL, dir string, p elang.Prefix) (*Store, error) {
	if redisURL == "" {
		return NewLocal(dir, p)
	}
	o, err := secrets.ParseRedisURL(elang.DB0URLEnv, redisURL)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if o.DB != elang.DB0 {
		return nil, fmt.Errorf("store: redis URL %s: names database %d, elang lives in database %d", secrets.RedactURL(redisURL), o.DB, elang.DB0)
	}
	o.ContextTimeoutEnabled = true
	return NewRedis(redis.NewClient(o), p)
}

// NewRedis is the store in the Redis rdb reaches (database 0 of instance elang).
// A *redis.Client must have ContextTimeoutEnabled, so a caller's deadline (the
// cache's per-call timeout) bounds a call to a hung server; one without it is
// refused with ErrInvalid.
func NewRedis(rdb redis.UniversalClient, p elang.Prefix) (*Store, error) {
	if p.String() == "" {
		return nil, fmt.Errorf("store: %w: the zero deployment prefix", ErrInvalid)
	}
	if rdb == nil {
		return nil, fmt.Errorf("store: %w: no redis client", ErrInvalid)
	}
	if c, ok := rdb.(*redis.Client); ok && !c.Options().ContextTimeoutEnabled {
		return nil, fmt.Errorf("store: %w: the redis client needs ContextTimeoutEnabled (else a hung server blocks each call for its read timeout, whatever the caller's deadline)", ErrInvalid)
	}
	scripts, err := elang.NewScripts(elang.Clients{DB0: rdb}, elang.WithPrefix(p))
	if err != nil {
		return nil, err
	}
	gen, err := elang.NewElangCacheGenerationKey(p)
	if err != nil {
		return nil, err
	}
	return &Store{prefix: p, b: &redisStore{p: p, rdb: rdb, s: scripts, generation: gen}}, nil
}

// Get reads the cache entry name: its value and true, or false when there is
// none (or it expired).
func (s *Store) Get(ctx context.Context, name string) ([]byte, bool, error) {
	if err := checkCacheName(s.prefix, name); err != nil {
		return nil, false, err
	}
	return s.b.get(ctx, name)
}

// Set stores the cache entry name for ttl (1ms..MaxTTL).
func (s *Store) Set(ctx context.Context, name string, value []byte, ttl time.Duration) error {
	if err := checkCacheName(s.prefix, name); err != nil {
		return err
	}
	if ttl < time.Millisecond || ttl > MaxTTL {
		return fmt.Errorf("store: %w: ttl %s: want 1ms..%s", ErrInvalid, ttl, MaxTTL)
	}
	if len(value) > MaxValueBytes {
		return fmt.Errorf("store: %w: a value of %d bytes: at most %d", ErrInvalid, len(value), MaxValueBytes)
	}
	return s.b.set(ctx, name, value, ttl)
}

// Delete removes the cache entry name and reports whether there was one.
func (s *Store) Delete(ctx context.Context, name string) (bool, error) {
	if err := checkCacheName(s.prefix, name); err != nil {
		return false, err
	}
	return s.b.del(ctx, name)
}

// ClearBatch clears cache entries of this prefix, starting at cursor (0 at
// first), and returns the cursor of the next call (0 when the pass is
// complete) and how many it removed. In the local directory it removes at most
// about batch entry files a step. In Redis one step retires every entry at
// once, listing and deleting nothing (it returns 0, 0): the deployment's cache
// generation changes (elang_cache_clear), an entry reads only under the
// generation it was written in, and the retired entries stay until their TTLs
// (docs/elang.md, "Cache", says what that costs). SCAN is never used: it would
// list the key names of every deployment on the server. Nothing outside this
// prefix's cache entries is touched: not its locks or sessions, not another
// prefix's keys; never FLUSHDB.
func (s *Store) ClearBatch(ctx context.Context, cursor uint64, batch int) (uint64, int, error) {
	if batch < 1 || batch > 10000 {
		return 0, 0, fmt.Errorf("store: %w: batch %d: want 1..10000", ErrInvalid, batch)
	}
	return s.b.clearBatch(ctx, cursor, batch)
}

// Acquire takes the lock name for owner for lease: true, or false and the lease
// the holder has left. The owner that holds it gets a fresh lease.
func (s *Store) Acquire(ctx context.Context, name, owner string, lease time.Duration) (bool, time.Duration, error) {
	if err := checkLock(name, owner, lease); err != nil {
		return false, 0, err
	}
	return s.b.acquire(ctx, name, owner, lease)
}

// Refresh extends owner's lock name to lease from now, only while owner holds it.
func (s *Store) Refresh(ctx context.Context, name, owner string, lease time.Duration) (Outcome, error) {
	if err := checkLock(name, owner, lease); err != nil {
		return "", err
	}
	return s.b.refresh(ctx, name, owner, lease)
}

// Release drops the lock name, only when owner holds it.
func (s *Store) Release(ctx context.Context, name, owner string) (Outcome, error) {
	if err := checkLock(name, owner, time.Millisecond); err != nil {
		return "", err
	}
	return s.b.release(ctx, name, owner)
}

func checkCacheName(p elang.Prefix, name string) error {
	if _, err := elang.NewElangCacheKey(p, name); err != nil {
		return fmt.Errorf("store: %w: cache name: want 1..128 characters of [A-Za-z0-9._-]", ErrInvalid)
	}
	return nil
}

func checkLock(name, owner string, lease time.Duration) error {
	switch {
	case name == "" || len(name) > MaxLockNameBytes:
		return fmt.Errorf("store: %w: lock name of %d bytes: want 1..%d", ErrInvalid, len(name), MaxLockNameBytes)
	case len(owner) < 16 || len(owner) > 128 || strings.Trim(owner, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "":
		return fmt.Errorf("store: %w: owner token: want 16..128 of [A-Za-z0-9_-]", ErrInvalid)
	case lease < time.Millisecond || lease > MaxLease:
		return fmt.Errorf("store: %w: lease %s: want 1ms..%s", ErrInvalid, lease, MaxLease)
	}
	return nil
}
