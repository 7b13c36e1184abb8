package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/examples/cacheservice/internal/redisgen/app"
	"github.com/hanchat/luagen/examples/cacheservice/internal/redisgen/sessions"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
)

// testPrefix is this run's deployment prefix: a test prefix (test: in front).
func testPrefix(t *testing.T) app.Prefix {
	t.Helper()
	p, err := app.NewPrefix("cachesvc:" + strings.ReplaceAll(uuid.NewString()[:8], "-", "") + ":")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := p.Test()
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// sessionsTestPrefix is a test prefix of the sessions instance: a test
// prefix is never a deployment prefix, so it is made by Test, not NewPrefix.
func sessionsTestPrefix(t *testing.T) sessions.Prefix {
	t.Helper()
	p, err := sessions.NewPrefix("cachesvc:" + strings.ReplaceAll(uuid.NewString()[:8], "-", "") + ":")
	if err == nil {
		p, err = p.Test()
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func appScripts(t *testing.T) (*app.Scripts, app.Prefix, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	c := srv.Client(0)
	p := testPrefix(t)
	s, err := app.NewScripts(app.Clients{DB0: c}, app.WithPrefix(p))
	if err != nil {
		t.Fatal(err)
	}
	return s, p, srv
}

// Every wrapper of the standalone instance on a real redis-server: the
// deployment prefix on every key, optional arguments, a nullable reply, a list
// trimmed to its max_len, a set, a bounded stream with a dedupe key and a
// list-of-struct reply.
func TestAppOnRealRedis(t *testing.T) {
	ctx := context.Background()
	s, p, srv := appScripts(t)
	rdb := srv.Client(0)

	// Cache: a miss is nil; ttl absent -> the key's TTL; ttl present -> it.
	entry, err := app.NewCacheEntryKey(p, "catalog.version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(entry.String(), p.String()+"cache:") {
		t.Fatalf("key %q lacks the deployment prefix %q", entry, p)
	}
	if v, err := s.CacheGet(ctx, entry); err != nil || v != nil {
		t.Fatalf("miss: %v %v", v, err)
	}
	if ttl, err := s.CacheSet(ctx, entry, app.CacheSetArgs{Value: []byte("4")}); err != nil || ttl != app.CacheEntryTTL.Milliseconds() {
		t.Fatalf("set without ttl: %d %v", ttl, err)
	}
	if pttl := rdb.PTTL(ctx, entry.String()).Val(); pttl <= app.CacheEntryTTL-time.Second || pttl > app.CacheEntryTTL {
		t.Fatalf("PTTL %v, want the key's %v", pttl, app.CacheEntryTTL)
	}
	if v, err := s.CacheGet(ctx, entry); err != nil || v == nil || string(*v) != "4" {
		t.Fatalf("hit: %v %v", v, err)
	}
	ten := 10 * time.Second
	if ttl, err := s.CacheSet(ctx, entry, app.CacheSetArgs{Value: []byte("5"), TTL: &ten}); err != nil || ttl != 10000 {
		t.Fatalf("set with ttl: %d %v", ttl, err)
	}
	if pttl := rdb.PTTL(ctx, entry.String()).Val(); pttl <= 9*time.Second || pttl > ten {
		t.Fatalf("PTTL %v, want 10s", pttl)
	}
	tooLong := 2 * time.Hour
	if _, err := s.CacheSet(ctx, entry, app.CacheSetArgs{Value: []byte("x"), TTL: &tooLong}); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Fatalf("a present ttl above its max: %v", err)
	}

	// Lock: optional lease, compare-and-delete.
	lock, _ := app.NewLockKey(p, "report-42")
	lease := 2 * time.Second
	if ok, err := s.LockAcquire(ctx, lock, app.LockAcquireArgs{Owner: "owner-aaaaaaaaaaaaaaaa", Lease: &lease}); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if pttl := rdb.PTTL(ctx, lock.String()).Val(); pttl <= time.Second || pttl > lease {
		t.Fatalf("lock PTTL %v, want the 2s lease", pttl)
	}
	if ok, _ := s.LockAcquire(ctx, lock, app.LockAcquireArgs{Owner: "owner-bbbbbbbbbbbbbbbb"}); ok {
		t.Fatal("a second owner acquired a held lock")
	}
	if ok, _ := s.LockRelease(ctx, lock, app.LockReleaseArgs{Owner: "owner-bbbbbbbbbbbbbbbb"}); ok {
		t.Fatal("another owner released the lock")
	}
	if ok, err := s.LockRelease(ctx, lock, app.LockReleaseArgs{Owner: "owner-aaaaaaaaaaaaaaaa"}); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}

	// A list keeps its newest max_len items.
	user := uuid.NewString()
	recent, _ := app.NewRecentKey(p, user)
	for i := 0; i < 30; i++ {
		n, err := s.RecentPush(ctx, recent, app.RecentPushArgs{Item: fmt.Sprintf("item-%d", i)})
		if err != nil || n != min(int64(i+1), app.RecentMaxLen) {
			t.Fatalf("push %d: length %d %v", i, n, err)
		}
	}
	if first := rdb.LIndex(ctx, recent.String(), 0).Val(); first != "item-29" {
		t.Fatalf("newest item %q", first)
	}

	// A set.
	tags, _ := app.NewTagsKey(p, "book-1")
	for _, tag := range []string{"go", "redis", "go"} {
		if _, err := s.TagsAdd(ctx, tags, app.TagsAddArgs{Tag: tag}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.TagsList(ctx, tags); err != nil || strings.Join(got, ",") != "go,redis" {
		t.Fatalf("tags %v %v", got, err)
	}

	// The outbox: once per message id, trimmed to max_len, read as a list of structs.
	outbox, _ := app.NewOutboxKey(p)
	var ids []string
	for i := 0; i < app.OutboxMaxLen+5; i++ {
		mid := uuid.NewString()
		dedupe, _ := app.NewOutboxDedupeKey(p, mid)
		args := app.OutboxAppendArgs{MessageID: mid, Type: "order.paid", Body: []byte(fmt.Sprint(i))}
		id, err := s.OutboxAppend(ctx, outbox, dedupe, args)
		if err != nil || id == nil {
			t.Fatalf("append %d: %v %v", i, id, err)
		}
		ids = append(ids, *id)
		if i == 0 {
			if again, err := s.OutboxAppend(ctx, outbox, dedupe, args); err != nil || again != nil {
				t.Fatalf("a retry of the same message id appended %v %v", again, err)
			}
			if pttl := rdb.PTTL(ctx, dedupe.String()).Val(); pttl <= app.OutboxDedupeTTL-time.Minute {
				t.Fatalf("dedupe PTTL %v", pttl)
			}
		}
	}
	if n := rdb.XLen(ctx, outbox.String()).Val(); n != app.OutboxMaxLen {
		t.Fatalf("XLEN %d, want the max_len %d", n, app.OutboxMaxLen)
	}
	page, err := s.OutboxRead(ctx, outbox, app.OutboxReadArgs{Count: 3})
	if err != nil || len(page.Entries) != 3 || !page.More {
		t.Fatalf("first page: %+v %v", page, err)
	}
	if page.Entries[0].ID != ids[5] || page.Entries[0].Type != "order.paid" || string(page.Entries[0].Body) != "5" || page.Entries[0].MessageID == "" {
		t.Fatalf("first entry %+v, want the oldest kept (%s)", page.Entries[0], ids[5])
	}
	last := ids[len(ids)-2]
	tail, err := s.OutboxRead(ctx, outbox, app.OutboxReadArgs{After: &last, Count: 10})
	if err != nil || len(tail.Entries) != 1 || tail.More || tail.Entries[0].ID != ids[len(ids)-1] {
		t.Fatalf("after %s: %+v %v", last, tail, err)
	}

	// Every key is under the prefix, and every one but the stream has a TTL.
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, p.String()) {
			t.Errorf("key %q outside the deployment prefix", k)
		}
		if k != outbox.String() && rdb.PTTL(ctx, k).Val() <= 0 {
			t.Errorf("key %q has no TTL", k)
		}
	}
}

// Keys of another deployment are refused before Redis is called, and a zero
// prefix builds nothing.
func TestAppRefusesAnotherDeployment(t *testing.T) {
	ctx := context.Background()
	s, _, srv := appScripts(t)
	other, _ := app.NewPrefix("other:")
	entry, _ := app.NewCacheEntryKey(other, "x")
	if _, err := s.CacheGet(ctx, entry); !errors.Is(err, runtime.ErrInvalidArg) || !strings.Contains(err.Error(), "another deployment prefix") {
		t.Fatalf("a key of another deployment: %v", err)
	}
	if _, err := app.NewCacheEntryKey(app.Prefix{}, "x"); !errors.Is(err, runtime.ErrInvalidKeyPart) {
		t.Fatalf("the zero prefix built a key: %v", err)
	}
	if _, err := app.NewScripts(app.Clients{DB0: srv.Client(0)}); !errors.Is(err, runtime.ErrInvalidPrefix) {
		t.Fatalf("NewScripts without WithPrefix: %v", err)
	}
	for _, bad := range []string{"acme:production", ":acme:", "acme::x:", "acme:*:", "{acme}:", "a"} {
		if _, err := app.NewPrefix(bad); !errors.Is(err, runtime.ErrInvalidPrefix) {
			t.Errorf("NewPrefix(%q) accepted", bad)
		}
	}
	if p, err := app.PrefixFromURL("https://Shop.Example.com:8443/eu/"); err != nil || p.String() != "shop.example.com-8443:eu:" {
		t.Fatalf("PrefixFromURL = %q %v", p, err)
	}
}

// Sessions on a real 3-master Redis Cluster: the hash tag puts a session's data
// and lock in one slot whatever the session, sessions spread over the masters,
// and the wrapper refuses one session's data with another session's lock.
func TestSessionsOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-master cluster")
	}
	ctx := context.Background()
	cluster := redistest.StartCluster(t, 3)
	cc := cluster.Client(t)
	sp := sessionsTestPrefix(t)
	s, err := sessions.NewScripts(sessions.Clients{DB0: cc}, sessions.WithPrefix(sp))
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.Preload(ctx, cc, sessions.AllScripts()...); err != nil {
		t.Fatal(err)
	}
	masters := map[string]bool{}
	for i := 0; i < 24; i++ {
		id := uuid.NewString()
		data, _ := sessions.NewSessionDataKey(sp, id)
		lock, _ := sessions.NewSessionLockKey(sp, id)
		a, _ := cc.ClusterKeySlot(ctx, data.String()).Result()
		b, _ := cc.ClusterKeySlot(ctx, lock.String()).Result()
		if a != b {
			t.Fatalf("session %s: data in slot %d, lock in slot %d", id, a, b)
		}
		node, err := cc.MasterForKey(ctx, data.String())
		if err != nil {
			t.Fatal(err)
		}
		masters[node.Options().Addr] = true
		owner := "owner-" + strings.ReplaceAll(id, "-", "")
		if ok, err := s.SessionLock(ctx, lock, sessions.SessionLockArgs{Owner: owner}); err != nil || !ok {
			t.Fatalf("lock %s: %v %v", id, ok, err)
		}
		for want := int64(1); want <= 2; want++ {
			if v, err := s.SessionSave(ctx, data, lock, sessions.SessionSaveArgs{Owner: owner, Body: []byte("state")}); err != nil || v != want {
				t.Fatalf("save %s: version %d %v, want %d", id, v, err, want)
			}
		}
		if _, err := s.SessionSave(ctx, data, lock, sessions.SessionSaveArgs{Owner: "owner-stale-writer-000", Body: []byte("old")}); !errors.Is(err, sessions.ErrNotOwner) {
			t.Fatalf("a stale writer: %v", err)
		}
		if pttl := cc.PTTL(ctx, data.String()).Val(); pttl <= sessions.SessionDataTTL-time.Minute || pttl > sessions.SessionDataTTL {
			t.Fatalf("session data PTTL %v", pttl)
		}
	}
	if len(masters) < 2 {
		t.Fatalf("24 sessions all landed on one master (%v): the test did not cross slots", masters)
	}
	// One session's data with another session's lock: refused by the wrapper.
	data, _ := sessions.NewSessionDataKey(sp, uuid.NewString())
	lock, _ := sessions.NewSessionLockKey(sp, uuid.NewString())
	if _, err := s.SessionSave(ctx, data, lock, sessions.SessionSaveArgs{Owner: "owner-aaaaaaaaaaaaaaaa", Body: []byte("x")}); !errors.Is(err, runtime.ErrInvalidArg) || !strings.Contains(err.Error(), "{session_id}") {
		t.Fatalf("mismatched session keys: %v", err)
	}
}
