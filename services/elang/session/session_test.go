package session_test

import (
	"context"
	"errors"
	"github.com/hanchat/luagen/services/secrets"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/elangtest"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/elang/session"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// sqlRevocations is the revocation check in SQL the seed keeps: a row in
// auth_revocations revokes a subject.
// sessionKey hashes session ids into key names in these tests; a deployment
// reads its secret from its config.
var sessionKey, _ = secrets.NewHMACKey([]byte("elang-session-test-secret-0123456789"))

type sqlRevocations struct {
	pool  *pgxpool.Pool
	calls atomic.Int64
}

const revocationsTable = `CREATE TABLE IF NOT EXISTS auth_revocations (subject text PRIMARY KEY)`

func (r *sqlRevocations) Revoked(ctx context.Context, subject string) (bool, error) {
	r.calls.Add(1)
	var revoked bool
	err := r.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM auth_revocations WHERE subject = $1)`, subject).Scan(&revoked)
	return revoked, err
}

func setup(t *testing.T, o session.Options) (*session.Sessions, *sqlRevocations, *redistest.Server, *prometheus.Registry, elang.Prefix) {
	t.Helper()
	pool := pgtest.Schema(t, 4, revocationsTable)
	srv := redistest.Start(t)
	rev := &sqlRevocations{pool: pool}
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	p := elangtest.Prefix(t, "session")
	x, err := session.New(srv.Client(elang.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.ContextTimeoutEnabled = true }), p, sessionKey, rev, o)
	if err != nil {
		t.Fatal(err)
	}
	return x, rev, srv, reg, p
}

// A writer that read the session and stalled past its 30 s lock is refused
// after another writer saved: the newer session stays. The stall is the lock's
// lease running out, made short on the server (PEXPIRE) instead of waited for.
func TestStaleSessionWriterRefused(t *testing.T) {
	ctx := context.Background()
	x, _, srv, reg, p := setup(t, session.Options{})
	admin := srv.Admin()

	created, err := x.Create(ctx, "user-7", []byte("cart=0"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := elang.NewElangSessionDataKey(p, sessionKey.Sum(created.ID))
	lock, _ := elang.NewElangSessionLockKey(p, sessionKey.Sum(created.ID))
	if ttl := admin.PTTL(ctx, data.String()).Val(); ttl <= 2*time.Hour-time.Minute || ttl > 2*time.Hour {
		t.Fatalf("session data PTTL %v, want 2h", ttl)
	}
	if ttl := admin.PTTL(ctx, lock.String()).Val(); ttl <= 29*time.Second || ttl > 30*time.Second {
		t.Fatalf("session lock PTTL %v, want 30s", ttl)
	}
	if err := created.Release(ctx); err != nil {
		t.Fatal(err)
	}

	a, err := x.Open(ctx, created.ID)
	if err != nil || a.Version != 1 || string(a.Body) != "cart=0" || a.Subject != "user-7" {
		t.Fatalf("A's open: %+v %v", a, err)
	}
	// While A holds the lock, B cannot open (no wait).
	if _, err := x.Open(ctx, created.ID); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("B opened A's held session: %v", err)
	}
	// A stalls: its lease runs out.
	if err := admin.PExpire(ctx, lock.String(), time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return admin.Exists(ctx, lock.String()).Val() == 0 }) {
		t.Fatal("the lock did not run out")
	}
	b, err := x.Open(ctx, created.ID)
	if err != nil || b.Version != 1 {
		t.Fatalf("B's open: %+v %v", b, err)
	}
	if err := b.Save(ctx, []byte("cart=2")); err != nil || b.Version != 2 {
		t.Fatalf("B's save: %v (version %d)", err, b.Version)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A wakes and writes what it read: refused, B's session stays.
	if err := a.Save(ctx, []byte("cart=1")); !errors.Is(err, session.ErrStale) {
		t.Fatalf("the stale writer: %v", err)
	}
	if got := admin.HGet(ctx, data.String(), "body").Val(); got != "cart=2" {
		t.Fatalf("stored body %q, want B's", got)
	}
	// While B holds the lock again, A's save is refused as locked, whatever its version.
	b2, _ := x.Open(ctx, created.ID)
	a.Version = b2.Version
	if err := a.Save(ctx, []byte("cart=1")); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("a save under another's lock: %v", err)
	}
	_ = b2.Release(ctx)
	if got := promtest.Value(t, reg, "elang_session_operations_total", map[string]string{"op": "save", "result": "stale"}); got != 1 {
		t.Fatalf("stale saves counted %v, want 1", got)
	}
}

// Many requests of one user race on one session: each opens (waiting for the
// lock), adds one to a counter in the body and saves. The session lock makes
// them take turns, so no increment is lost: the final count is exact.
func TestSessionLockSerializesRequests(t *testing.T) {
	ctx := context.Background()
	x, rev, _, _, _ := setup(t, session.Options{LockWait: 20 * time.Second})
	s, err := x.Create(ctx, "user-9", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Release(ctx)
	rev.calls.Store(0)
	const workers, each = 8, 10
	var wg sync.WaitGroup
	var errs atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				h, err := x.Open(ctx, s.ID)
				if err != nil {
					errs.Add(1)
					continue
				}
				n := len(h.Body)
				if err := h.Save(ctx, []byte(strings.Repeat("x", n+1))); err != nil {
					errs.Add(1)
				}
				if err := h.Release(ctx); err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	final, err := x.Open(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if errs.Load() != 0 || len(final.Body) != 1+workers*each || final.Version != 1+workers*each {
		t.Fatalf("errors %d, body %d bytes, version %d: want 0, %d, %d", errs.Load(), len(final.Body), final.Version, 1+workers*each, 1+workers*each)
	}
	if rev.calls.Load() != workers*each+1 {
		t.Fatalf("revocation checked %d times, want once per open (%d)", rev.calls.Load(), workers*each+1)
	}
}

// Revocation is checked in SQL on every open: a revoked subject's session ends
// (data and lock gone), a failing check serves nothing and leaves the lock free.
func TestSessionRevocationCheckedInSQL(t *testing.T) {
	ctx := context.Background()
	x, rev, srv, _, p := setup(t, session.Options{})
	s, err := x.Create(ctx, "user-revoked", []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Release(ctx)
	if _, err := rev.pool.Exec(ctx, `INSERT INTO auth_revocations VALUES ('user-revoked')`); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Open(ctx, s.ID); !errors.Is(err, session.ErrRevoked) {
		t.Fatalf("open of a revoked subject: %v", err)
	}
	if _, err := x.Open(ctx, s.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("the revoked session still exists: %v", err)
	}
	if n := srv.Admin().DBSize(ctx).Val(); n != 0 {
		t.Fatalf("%d keys left after revocation", n)
	}
	// A failing SQL check: nothing is served, the lock is dropped.
	s2, _ := x.Create(ctx, "user-ok", []byte("b"))
	_ = s2.Release(ctx)
	if _, err := rev.pool.Exec(ctx, `DROP TABLE auth_revocations`); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Open(ctx, s2.ID); !errors.Is(err, session.ErrRevocationUnknown) {
		t.Fatalf("open with a failing revocation check: %v", err)
	}
	lock, _ := elang.NewElangSessionLockKey(p, sessionKey.Sum(s2.ID))
	if srv.Admin().Exists(ctx, lock.String()).Val() != 0 {
		t.Fatal("the lock stayed after a failed revocation check")
	}
}

// A Redis outage is reported (ErrUnavailable, counted), never a session from
// this process's memory: a hung server within the timeout, a stopped one at
// once; bad ids are refused before Redis.
func TestSessionFailuresAreReported(t *testing.T) {
	ctx := context.Background()
	x, _, srv, reg, _ := setup(t, session.Options{Timeout: 200 * time.Millisecond})
	s, err := x.Create(ctx, "user-1", []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Open(ctx, "../etc"); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("a bad id: %v", err)
	}
	srv.Pause()
	start := time.Now()
	if _, err := x.Open(ctx, s.ID); !errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("open on a hung server: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("open on a hung server took %v with a 200ms timeout", took)
	}
	srv.Resume()
	srv.Stop()
	if _, err := x.Open(ctx, s.ID); !errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("open on a stopped server: %v", err)
	}
	if err := s.Save(ctx, []byte("c")); !errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("save on a stopped server: %v", err)
	}
	if got := promtest.Sum(t, reg, "elang_session_failures_total", nil); got != 3 {
		t.Fatalf("failures counted %v, want 3 (hung open, stopped open and save)", got)
	}
}
