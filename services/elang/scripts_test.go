package elang_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const (
	ownerA = "owner-aaaaaaaaaaaaaaaa"
	ownerB = "owner-bbbbbbbbbbbbbbbb"
)

// harness is the elang scripts on a luatest server with a fake clock, under a
// test deployment prefix.
func harness(t *testing.T) (*elang.Scripts, elang.Prefix, *luatest.Server, *luatest.Scripter) {
	t.Helper()
	p, err := testPrefix("elang:")
	if err != nil {
		t.Fatal(err)
	}
	h := luatest.NewServer(luatest.NewClock(t0))
	sc := h.Scripter()
	s, err := elang.NewScripts(elang.Clients{DB0: sc}, elang.WithPrefix(p))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sc.Check(); err != nil {
			t.Errorf("a script broke a rule (keys from KEYS, a TTL on every write): %v", err)
		}
	})
	return s, p, h, sc
}

func ttlOf(t *testing.T, h *luatest.Server, key string) time.Duration {
	t.Helper()
	e, ok := h.Keyspace()[key]
	if !ok {
		t.Fatalf("key %s is absent", key)
	}
	return e.TTL
}

// elang_cache_get/set/delete/clear: a miss is nil, a value lives exactly its
// TTL (catalog.version = 4 for 300 s), delete says whether there was one; an
// entry is stored under the deployment's generation, which every set renews
// (31 d), and a clear retires every entry at once: they read as misses, stay
// until their TTLs, and a set after it writes under the new generation.
func TestCacheScriptsOnHarness(t *testing.T) {
	ctx := context.Background()
	s, p, h, _ := harness(t)
	k, err := elang.NewElangCacheKey(p, "catalog.version")
	if err != nil {
		t.Fatal(err)
	}
	if k.String() != "test:elang:cache:catalog.version" {
		t.Fatalf("key %q", k)
	}
	gen, _ := elang.NewElangCacheGenerationKey(p)
	if gen.String() != "test:elang:generation:cache" {
		t.Fatalf("generation key %q", gen)
	}
	set := func(k elang.ElangCacheKey, v string, ttl time.Duration) (bool, error) {
		return s.ElangCacheSet(ctx, k, gen, elang.ElangCacheSetArgs{Value: []byte(v), TTL: ttl, Fresh: "generation-00000000000001"})
	}
	if v, err := s.ElangCacheGet(ctx, k, gen); err != nil || v != nil {
		t.Fatalf("miss: %v %v", v, err)
	}
	if ok, err := set(k, "4", 300*time.Second); err != nil || !ok {
		t.Fatalf("set: %v %v", ok, err)
	}
	if ttl := ttlOf(t, h, k.String()); ttl != 300*time.Second {
		t.Fatalf("TTL %v, want 300s", ttl)
	}
	if ttl := ttlOf(t, h, gen.String()); ttl != elang.ElangCacheGenerationTTL {
		t.Fatalf("generation TTL %v, want %v", ttl, elang.ElangCacheGenerationTTL)
	}
	if e := h.Keyspace()[k.String()]; e.String != "generation-00000000000001:4" {
		t.Fatalf("stored %q", e.String)
	}
	h.Clock().Advance(300 * time.Second)
	if v, err := s.ElangCacheGet(ctx, k, gen); err != nil || v == nil || string(*v) != "4" {
		t.Fatalf("hit at 300 s: %v %v", v, err)
	}
	h.Clock().Advance(time.Millisecond)
	if v, err := s.ElangCacheGet(ctx, k, gen); err != nil || v != nil {
		t.Fatalf("after 300 s: %v %v", v, err)
	}
	_, _ = set(k, "5", time.Minute)
	if ok, err := s.ElangCacheDelete(ctx, k); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := s.ElangCacheDelete(ctx, k); err != nil || ok {
		t.Fatalf("delete again: %v %v", ok, err)
	}

	// The clear: both entries read as misses at once and stay until their TTLs.
	other1, _ := elang.NewElangCacheKey(p, "other.1")
	_, _ = set(k, "6", time.Hour)
	_, _ = set(other1, "7", time.Minute)
	if ok, err := s.ElangCacheClear(ctx, gen, elang.ElangCacheClearArgs{Fresh: "generation-00000000000002"}); err != nil || !ok {
		t.Fatalf("clear: %v %v", ok, err)
	}
	for _, key := range []elang.ElangCacheKey{k, other1} {
		if v, err := s.ElangCacheGet(ctx, key, gen); err != nil || v != nil {
			t.Fatalf("%s after the clear: %v %v", key, v, err)
		}
	}
	if n := len(h.Keyspace()); n != 3 {
		t.Fatalf("%d keys after the clear, want 3 (2 retired entries, the generation)", n)
	}
	if ok, _ := set(k, "8", time.Hour); !ok {
		t.Fatal("set after the clear")
	}
	if v, err := s.ElangCacheGet(ctx, k, gen); err != nil || v == nil || string(*v) != "8" {
		t.Fatalf("the entry written after the clear: %v %v", v, err)
	}
	h.Clock().Advance(time.Hour)
	if _, ok := h.Keyspace()[other1.String()]; ok {
		t.Fatal("a retired entry outlived its TTL")
	}

	// A TTL of zero or above 30 days, and a key of another prefix, never reach Redis.
	for _, ttl := range []time.Duration{0, 31 * 24 * time.Hour} {
		if _, err := set(k, "x", ttl); !errors.Is(err, runtime.ErrInvalidArg) {
			t.Errorf("ttl %v: %v", ttl, err)
		}
	}
	other, _ := testPrefix("other:")
	ok2, _ := elang.NewElangCacheKey(other, "catalog.version")
	if _, err := s.ElangCacheGet(ctx, ok2, gen); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Errorf("another prefix's key: %v", err)
	}
}

// elang_lock_acquire/refresh/release: only the owner refreshes or releases; a
// late owner (its lease ran out, another took the lock) can do neither; the
// name enters the key only hashed, so "report:42" cannot forge another key.
func TestLockScriptsOnHarness(t *testing.T) {
	ctx := context.Background()
	s, p, h, _ := harness(t)
	k, err := elang.NewElangLockKey(p, "report:42")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(k.String(), "report") || strings.Count(k.String(), ":") != strings.Count(p.String(), ":")+1 {
		t.Fatalf("lock key %q holds the name or a separator of its own", k)
	}
	lease := 30 * time.Second
	g, err := s.ElangLockAcquire(ctx, k, elang.ElangLockAcquireArgs{Owner: ownerA, Lease: lease})
	if err != nil || !g.Acquired || g.TTL != lease {
		t.Fatalf("acquire: %+v %v", g, err)
	}
	h.Clock().Advance(10 * time.Second)
	if g, _ := s.ElangLockAcquire(ctx, k, elang.ElangLockAcquireArgs{Owner: ownerB, Lease: lease}); g.Acquired || g.TTL != 20*time.Second {
		t.Fatalf("B acquired a held lock, or was told a wrong lease: %+v", g)
	}
	for _, op := range []func() (elang.LockOutcome, error){
		func() (elang.LockOutcome, error) {
			return s.ElangLockRefresh(ctx, k, elang.ElangLockRefreshArgs{Owner: ownerB, Lease: lease})
		},
		func() (elang.LockOutcome, error) {
			return s.ElangLockRelease(ctx, k, elang.ElangLockReleaseArgs{Owner: ownerB})
		},
	} {
		if o, err := op(); err != nil || o != elang.LockOutcomeOtherOwner {
			t.Fatalf("B on A's lock: %v %v", o, err)
		}
	}
	if o, _ := s.ElangLockRefresh(ctx, k, elang.ElangLockRefreshArgs{Owner: ownerA, Lease: lease}); o != elang.LockOutcomeOk || ttlOf(t, h, k.String()) != lease {
		t.Fatalf("A's refresh: %v", o)
	}
	// A acquiring again keeps it with a fresh lease.
	h.Clock().Advance(5 * time.Second)
	if g, _ := s.ElangLockAcquire(ctx, k, elang.ElangLockAcquireArgs{Owner: ownerA, Lease: lease}); !g.Acquired || ttlOf(t, h, k.String()) != lease {
		t.Fatalf("re-acquire by the owner: %+v", g)
	}
	// A stalls past its lease; B takes the lock; A is now a late owner.
	h.Clock().Advance(lease + time.Millisecond)
	if o, _ := s.ElangLockRefresh(ctx, k, elang.ElangLockRefreshArgs{Owner: ownerA, Lease: lease}); o != elang.LockOutcomeExpired {
		t.Fatalf("refresh after the lease: %v", o)
	}
	if g, _ := s.ElangLockAcquire(ctx, k, elang.ElangLockAcquireArgs{Owner: ownerB, Lease: lease}); !g.Acquired {
		t.Fatal("B could not take an expired lock")
	}
	if o, _ := s.ElangLockRelease(ctx, k, elang.ElangLockReleaseArgs{Owner: ownerA}); o != elang.LockOutcomeOtherOwner {
		t.Fatalf("late owner's release: %v", o)
	}
	if o, _ := s.ElangLockRefresh(ctx, k, elang.ElangLockRefreshArgs{Owner: ownerA, Lease: lease}); o != elang.LockOutcomeOtherOwner {
		t.Fatalf("late owner's refresh: %v", o)
	}
	if e := h.Keyspace()[k.String()]; e.String != ownerB || e.TTL != lease {
		t.Fatalf("B's lock after A's late calls: %+v", e)
	}
	if o, _ := s.ElangLockRelease(ctx, k, elang.ElangLockReleaseArgs{Owner: ownerB}); o != elang.LockOutcomeOk {
		t.Fatalf("B's release: %v", o)
	}
	if o, _ := s.ElangLockRelease(ctx, k, elang.ElangLockReleaseArgs{Owner: ownerB}); o != elang.LockOutcomeExpired {
		t.Fatalf("release of no lock: %v", o)
	}
	// Leases above 10 minutes never reach Redis.
	if _, err := s.ElangLockAcquire(ctx, k, elang.ElangLockAcquireArgs{Owner: ownerA, Lease: 11 * time.Minute}); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Fatalf("an 11-minute lease: %v", err)
	}
}

// sessionKeys are the keys of session id: they hold its HMAC, never id.
func sessionKeys(t *testing.T, p elang.Prefix, id string) (elang.ElangSessionDataKey, elang.ElangSessionLockKey) {
	t.Helper()
	hk, _ := secrets.NewHMACKey([]byte("elang-session-test-secret-0123456789"))
	h := hk.Sum(id)
	d, err := elang.NewElangSessionDataKey(p, h)
	if err != nil {
		t.Fatal(err)
	}
	l, err := elang.NewElangSessionLockKey(p, h)
	if err != nil {
		t.Fatal(err)
	}
	return d, l
}

// elang_session_open/save/destroy: a read takes the session's 30 s lock; data
// lives 2 h from each save; a writer that read an older version is refused
// (STALE) after another writer saved, and one writing while another holds the
// lock is refused (LOCKED); the data and lock keys of two sessions never pair.
func TestSessionScriptsOnHarness(t *testing.T) {
	ctx := context.Background()
	s, p, h, _ := harness(t)
	id := strings.Repeat("ab", 32)
	data, lock := sessionKeys(t, p, id)

	r, err := s.ElangSessionOpen(ctx, data, lock, elang.ElangSessionOpenArgs{Owner: ownerA})
	if err != nil || !r.Acquired || r.Found {
		t.Fatalf("open a new session: %+v %v", r, err)
	}
	if ttlOf(t, h, lock.String()) != 30*time.Second {
		t.Fatal("the session lock does not last 30 s")
	}
	v, err := s.ElangSessionSave(ctx, data, lock, elang.ElangSessionSaveArgs{Owner: ownerA, Version: 0, Subject: "user-7", Body: []byte("cart=1")})
	if err != nil || v != 1 {
		t.Fatalf("create: %d %v", v, err)
	}
	if ttlOf(t, h, data.String()) != 2*time.Hour {
		t.Fatal("session data does not live 2 h")
	}
	// B reads while A holds the lock: not acquired, told the lease left.
	h.Clock().Advance(4 * time.Second)
	if r, _ := s.ElangSessionOpen(ctx, data, lock, elang.ElangSessionOpenArgs{Owner: ownerB}); r.Acquired || r.Found || r.LockTTL != 26*time.Second || len(r.Body) != 0 {
		t.Fatalf("B opened A's locked session: %+v", r)
	}
	if _, err := s.ElangSessionSave(ctx, data, lock, elang.ElangSessionSaveArgs{Owner: ownerB, Version: 1, Subject: "user-7", Body: []byte("x")}); !errors.Is(err, elang.ErrLocked) {
		t.Fatalf("B saved under A's lock: %v", err)
	}
	if o, _ := s.ElangLockRelease(ctx, lock, elang.ElangLockReleaseArgs{Owner: ownerA}); o != elang.LockOutcomeOk {
		t.Fatalf("A's release: %v", o)
	}

	// A reads version 1 and stalls past its lock; B reads version 1, saves 2.
	if r, _ := s.ElangSessionOpen(ctx, data, lock, elang.ElangSessionOpenArgs{Owner: ownerA}); !r.Acquired || !r.Found || r.Version != 1 || r.Subject != "user-7" || string(r.Body) != "cart=1" {
		t.Fatalf("A's read: %+v", r)
	}
	h.Clock().Advance(31 * time.Second)
	if r, _ := s.ElangSessionOpen(ctx, data, lock, elang.ElangSessionOpenArgs{Owner: ownerB}); !r.Acquired || r.Version != 1 {
		t.Fatalf("B's read after A's lock ran out: %+v", r)
	}
	if v, err := s.ElangSessionSave(ctx, data, lock, elang.ElangSessionSaveArgs{Owner: ownerB, Version: 1, Subject: "user-7", Body: []byte("cart=2")}); err != nil || v != 2 {
		t.Fatalf("B's save: %d %v", v, err)
	}
	_, _ = s.ElangLockRelease(ctx, lock, elang.ElangLockReleaseArgs{Owner: ownerB})
	// A wakes and writes what it read as version 1: refused, B's data stays.
	if _, err := s.ElangSessionSave(ctx, data, lock, elang.ElangSessionSaveArgs{Owner: ownerA, Version: 1, Subject: "user-7", Body: []byte("cart=1+stale")}); !errors.Is(err, elang.ErrStale) {
		t.Fatalf("stale save: %v", err)
	}
	// Creating over an existing session is stale too.
	if _, err := s.ElangSessionSave(ctx, data, lock, elang.ElangSessionSaveArgs{Owner: ownerA, Version: 0, Subject: "user-8", Body: []byte("y")}); !errors.Is(err, elang.ErrStale) {
		t.Fatalf("create over an existing session: %v", err)
	}
	if e := h.Keyspace()[data.String()]; e.Hash["body"] != "cart=2" || e.Hash["version"] != "2" {
		t.Fatalf("session after refused writes: %+v", e.Hash)
	}

	// Data and lock of two sessions never pair.
	_, otherLock := sessionKeys(t, p, strings.Repeat("cd", 32))
	if _, err := s.ElangSessionOpen(ctx, data, otherLock, elang.ElangSessionOpenArgs{Owner: ownerA}); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Fatalf("another session's lock: %v", err)
	}
	if _, err := elang.NewElangSessionDataKey(p, "not-hex"); !errors.Is(err, runtime.ErrInvalidKeyPart) {
		t.Fatalf("a session id that is not 64 hex: %v", err)
	}

	// Destroy removes data and lock; a save of the old version is stale after it.
	_, _ = s.ElangSessionOpen(ctx, data, lock, elang.ElangSessionOpenArgs{Owner: ownerA})
	if ok, err := s.ElangSessionDestroy(ctx, data, lock); err != nil || !ok {
		t.Fatalf("destroy: %v %v", ok, err)
	}
	if len(h.Keyspace()) != 0 {
		t.Fatalf("keys left after destroy: %v", h.Keyspace())
	}
	if _, err := s.ElangSessionSave(ctx, data, lock, elang.ElangSessionSaveArgs{Owner: ownerA, Version: 2, Subject: "user-7", Body: []byte("z")}); !errors.Is(err, elang.ErrStale) {
		t.Fatalf("save after destroy: %v", err)
	}
	if ok, _ := s.ElangSessionDestroy(ctx, data, lock); ok {
		t.Fatal("destroy of no session said it existed")
	}
	// Data expires 2 h after the last save, not after the first.
	_, _ = s.ElangSessionSave(ctx, data, lock, elang.ElangSessionSaveArgs{Owner: ownerA, Version: 0, Subject: "u", Body: []byte("1")})
	h.Clock().Advance(time.Hour)
	_, _ = s.ElangSessionSave(ctx, data, lock, elang.ElangSessionSaveArgs{Owner: ownerA, Version: 1, Subject: "u", Body: []byte("2")})
	h.Clock().Advance(2 * time.Hour)
	if r, _ := s.ElangSessionOpen(ctx, data, lock, elang.ElangSessionOpenArgs{Owner: ownerA}); !r.Found || r.Version != 2 {
		t.Fatalf("2 h after the last save: %+v", r)
	}
	h.Clock().Advance(time.Millisecond)
	if r, _ := s.ElangSessionOpen(ctx, data, lock, elang.ElangSessionOpenArgs{Owner: ownerA}); r.Found {
		t.Fatalf("2 h + 1 ms after the last save: %+v", r)
	}
}

// elang_rate_limit_fixed/sliding on the deployment prefix: exact counts, an
// exact Retry-After, and the subject only as an HMAC in the key.
func TestRateLimitScriptsOnHarness(t *testing.T) {
	ctx := context.Background()
	s, p, h, _ := harness(t)
	hk, err := secrets.NewHMACKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := elang.NewElangRLKey(p, "login", hk.Sum("alice@example.com"), 10)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(k.String(), "alice") {
		t.Fatalf("the subject is in the key %q", k)
	}
	for i := 1; i <= 4; i++ {
		d, err := s.ElangRateLimitFixed(ctx, k, elang.ElangRateLimitFixedArgs{Limit: 3, Window: 10 * time.Second, Cost: 1})
		if err != nil || d.Allowed != (i <= 3) || d.Remaining != int64(max(3-i, 0)) {
			t.Fatalf("fixed call %d: %+v %v", i, d, err)
		}
		if i == 4 && d.RetryAfter != 10*time.Second+time.Millisecond {
			t.Fatalf("retry after %v, want the window's end", d.RetryAfter)
		}
		h.Clock().Advance(0)
	}
	ks, _ := elang.NewElangRLKey(p, "api", hk.Sum("alice@example.com"), 10)
	for i := 1; i <= 3; i++ {
		d, err := s.ElangRateLimitSliding(ctx, ks, elang.ElangRateLimitSlidingArgs{Limit: 2, Window: 10 * time.Second, Cost: 1, Nonce: "nonce-00000000000" + string(rune('0'+i))})
		if err != nil || d.Allowed != (i <= 2) {
			t.Fatalf("sliding call %d: %+v %v", i, d, err)
		}
		if i == 3 && d.RetryAfter != 8*time.Second {
			t.Fatalf("sliding retry after %v, want 8s (the first entry leaves 10 s after it came)", d.RetryAfter)
		}
		h.Clock().Advance(time.Second)
	}
	if ttl := ttlOf(t, h, ks.String()); ttl <= 0 || ttl > 10*time.Second {
		t.Fatalf("sliding bucket TTL %v", ttl)
	}
}

// testPrefix is the test prefix of the deployment prefix s ("test:" + s).
func testPrefix(s string) (elang.Prefix, error) {
	p, err := elang.NewPrefix(s)
	if err != nil {
		return p, err
	}
	return p.Test()
}
