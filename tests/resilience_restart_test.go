package tests

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/vm1/coord"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/hanchat/luagen/services/vm1/presence"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/hanchat/luagen/services/vm1/settings"
	"github.com/redis/go-redis/v9"
)

// restartState is one piece of every kind of state VM1 holds, written through
// the packages, and what each looked like before the restart.
type restartState struct {
	lockName coord.Name
	lock     *coord.Lock
	done     idempotency.Request // completed
	doneOut  idempotency.Outcome
	calls    idemtest.Counter
	pending  idempotency.Request // reserved by another request, in progress
	conn     presence.Connection
	version  int64
	snapshot resilienceSettings
	subject  ratelimit.Subject
	peek     ratelimit.Decision
	kid      string
}

func writeRestartState(t *testing.T, s *vm1Stack) *restartState {
	t.Helper()
	ctx := scripttest.Context(t)
	w := &restartState{version: 7, kid: "kid-" + scripttest.Nonce(t)}
	var err error
	if w.lockName, err = coord.Delivery(uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	if w.lock, err = s.locker.Obtain(ctx, w.lockName, coord.Options{}); err != nil {
		t.Fatal(err)
	}
	w.done = idemtest.Request(t, vm1.IdemScopeMessageSend, `{"text":"restart"}`)
	if w.doneOut, err = s.keeper.Do(ctx, w.done, w.calls.Call(w.done.Key, idemtest.Created(), nil)); err != nil || w.doneOut.Replayed {
		t.Fatalf("idempotent call: %+v %v", w.doneOut, err)
	}
	w.pending = idemtest.Request(t, vm1.IdemScopeAttachmentInit, `{"file":"x"}`)
	rec, _ := vm1.NewAPIIdemKey(w.pending.Scope, w.pending.UserID, testHMACKey.Sum(w.pending.Key))
	lk, _ := vm1.NewAPIIdemLockKey(w.pending.Scope, w.pending.UserID, testHMACKey.Sum(w.pending.Key))
	if r, err := s.scripts.IdemReserve(ctx, rec, lk, vm1.IdemReserveArgs{Fingerprint: w.pending.Fingerprint, Owner: scripttest.Nonce(t)}); err != nil || r.State != vm1.IdemStateReserved {
		t.Fatalf("reservation: %+v %v", r, err)
	}
	if w.conn, _, err = s.presence.Connect(ctx, uuid.NewString(), 3); err != nil {
		t.Fatal(err)
	}
	w.snapshot = resilienceSettings{Rules: []string{"rule.a", "rule.b"}, Limit: 42, Enabled: true}
	if err := s.settings.Put(ctx, w.version, w.snapshot); err != nil {
		t.Fatal(err)
	}
	w.subject = ratelimit.Subject{UserID: uuid.NewString(), DialogID: uuid.NewString(), IP: netip.MustParseAddr("198.51.100.7")}
	for i := 0; i < 5; i++ {
		if d, err := s.limiter.Allow(ctx, w.subject, vm1.APIRouteMessagesSend); err != nil || !d.Allowed || d.Degraded {
			t.Fatalf("allow %d: %+v %v", i, d, err)
		}
	}
	if w.peek, err = s.limiter.Peek(ctx, w.subject, vm1.APIRouteMessagesSend, 1); err != nil {
		t.Fatal(err)
	}
	if created, err := s.jwks.MarkMissing(ctx, w.kid); err != nil || !created {
		t.Fatalf("jwks mark: %v %v", created, err)
	}
	return w
}

// checkRestartState checks, through the packages, that every piece survived
// and behaves as before the restart.
func checkRestartState(t *testing.T, s *vm1Stack, w *restartState, lockLeftAtMost time.Duration) {
	t.Helper()
	ctx := scripttest.Context(t)
	// The lock is still held: another owner is refused, the owner's token still
	// extends and releases it, and the next holder's fence is larger.
	_, err := s.locker.Obtain(ctx, w.lockName, coord.Options{})
	var no *coord.NotObtainedError
	if !errors.As(err, &no) || no.HolderTTL <= 0 || no.HolderTTL > lockLeftAtMost {
		t.Errorf("another owner after the restart: %v, want ErrNotObtained with the holder's TTL in (0, %v]", err, lockLeftAtMost)
	}
	if err := w.lock.Extend(ctx); err != nil {
		t.Errorf("the owner extends after the restart: %v", err)
	}
	if err := w.lock.Release(ctx); err != nil {
		t.Errorf("the owner releases after the restart: %v", err)
	}
	next, err := s.locker.Obtain(ctx, w.lockName, coord.Options{})
	if err != nil || next.Fence() <= w.lock.Fence() {
		t.Errorf("the next holder: %v, fence %v after %v", err, next, w.lock.Fence())
	} else if err := next.Release(ctx); err != nil {
		t.Error(err)
	}
	// The completed call answers from the Redis record that survived; the
	// reserved one is still in progress and does not run.
	out, err := s.keeper.Do(ctx, w.done, w.calls.Call(w.done.Key, idemtest.Created(), nil))
	if err != nil || !out.Replayed || out.Source != idempotency.SourceRedis || !cmp.Equal(out.Response, w.doneOut.Response) {
		t.Errorf("the completed call after the restart: %+v %v, want the Redis record", out, err)
	}
	var pendingCalls idemtest.Counter
	if _, err := s.keeper.Do(ctx, w.pending, pendingCalls.Call(w.pending.Key, idemtest.Created(), nil)); !errors.Is(err, idempotency.ErrInProgress) {
		t.Errorf("the reserved call after the restart: %v, want ErrInProgress", err)
	}
	if w.calls.Runs.Load() != 1 || pendingCalls.Runs.Load() != 0 || s.sideEffects(t, w.done.Key) != 1 {
		t.Errorf("runs %d and %d, side effects %d; want 1, 0, 1", w.calls.Runs.Load(), pendingCalls.Runs.Load(), s.sideEffects(t, w.done.Key))
	}
	// Presence: the connection is live and its heartbeat does not revive it.
	if ids, err := s.presence.Connections(ctx, w.conn.UserID, 10); err != nil || !slices.Equal(ids, []string{w.conn.ID}) {
		t.Errorf("connections after the restart: %v %v", ids, err)
	}
	if st, err := s.presence.Heartbeat(ctx, w.conn, 3); err != nil || st.Revived || st.Connections != 1 {
		t.Errorf("heartbeat after the restart: %+v %v", st, err)
	}
	// The settings snapshot reads back equal.
	if got, err := s.settings.Get(ctx, w.version); err != nil || !cmp.Equal(got, w.snapshot) {
		t.Errorf("settings after the restart: %+v %v", got, err)
	}
	// The rate limit counts on from where it was.
	if d, err := s.limiter.Peek(ctx, w.subject, vm1.APIRouteMessagesSend, 1); err != nil || d.Remaining != w.peek.Remaining || d.Limit != w.peek.Limit || d.Scope != w.peek.Scope {
		t.Errorf("rate limit after the restart: %+v %v, want remaining %d as before (%+v)", d, err, w.peek.Remaining, w.peek)
	}
	// The JWKS negative marker is still there and keeps its first TTL.
	if missing, err := s.jwks.KnownMissing(ctx, w.kid); err != nil || !missing {
		t.Errorf("jwks marker after the restart: %v %v", missing, err)
	}
	if created, err := s.jwks.MarkMissing(ctx, w.kid); err != nil || created {
		t.Errorf("jwks mark after the restart: created %v %v, want the old marker", created, err)
	}
}

// Seed 000 §12 and seed 004 §8 "restart with AOF/RDB", on the generated VM1
// config (appendonly yes, everysec, aof-use-rdb-preamble, aof-load-truncated;
// RDB save points) and ACL:
//   - AOF: SIGTERM (Stop) flushes the AOF, and the restart loads it;
//   - RDB only (appendonly no): SAVE, one more write, SIGKILL (a crash), and the
//     restart loads the RDB: the write after SAVE is gone, everything before it
//     is back.
//
// Locks, idempotency records and reservations, presence, settings snapshots,
// rate-limit buckets and JWKS markers come back with the same content and a
// TTL that went on running (expiries are absolute in the AOF and RDB; none is
// reset upward), every key still has its TTL, and the packages carry on: the
// lock's owner still owns it, a completed call replays without running, the
// rate limit counts on. Scripts are reloaded after NOSCRIPT without an error
// reaching a caller.
func TestResilienceRestartKeepsStateAndTTLs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		extra  []string
		loaded string // the log line of the restart's load
	}{
		{"AOF", nil, "DB loaded from append only file"},
		{"RDB", []string{"appendonly no"}, "DB loaded from disk"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := scripttest.Context(t)
			a := startACLInstance(t, "vm1", c.extra...)
			// The generated default user's AOF replay grant (gen/acl) opens nothing: without credentials, or as default,
			// nobody gets in.
			anonymous := redis.NewClient(&redis.Options{Addr: a.srv.Addr, MaxRetries: -1})
			if err := anonymous.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
				t.Fatalf("a client without credentials: %v, want NOAUTH", err)
			}
			if err := anonymous.Do(ctx, "AUTH", "default", "").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
				t.Fatalf("AUTH default: %v, want WRONGPASS", err)
			}
			_ = anonymous.Close()
			s := newVM1Stack(t, a, nil, ratelimit.DefaultPolicy())
			admin0, admin1 := a.adminDB(vm1.DB0), a.adminDB(vm1.DB1)
			w := writeRestartState(t, s)
			// Let time pass, so a TTL reset to its full length would show.
			const passed = 1500 * time.Millisecond
			letTimePass(t, admin0, passed)

			before0, before1 := keyspaceOf(t, admin0), keyspaceOf(t, admin1)
			read := time.Now()
			loads, mark := strings.Count(a.srv.Log(), c.loaded), logMark(a.srv)
			if c.name == "AOF" {
				a.srv.Stop()
			} else {
				if err := admin0.Save(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				// Written after SAVE: a crash loses it.
				if err := s.settings.Put(ctx, w.version+1, w.snapshot); err != nil {
					t.Fatal(err)
				}
				a.srv.Kill()
			}
			a.srv.Restart()
			if got := strings.Count(a.srv.Log(), c.loaded); got != loads+1 {
				t.Fatalf("the restart did not log %q", c.loaded)
			}
			checkCleanLoad(t, a.srv, mark)
			after0, after1 := keyspaceOf(t, admin0), keyspaceOf(t, admin1)
			elapsed := time.Since(read)
			compareAfterRestart(t, "db0", before0, after0, elapsed)
			compareAfterRestart(t, "db1", before1, after1, elapsed)

			if c.name == "RDB" {
				if _, err := s.settings.Get(ctx, w.version+1); !errors.Is(err, settings.ErrNotFound) {
					t.Errorf("the snapshot written after SAVE: %v, want ErrNotFound (lost in the crash)", err)
				}
			}
			checkRestartState(t, s, w, vm1.CoordLockDeliveryTTL-passed)
			scripttest.AuditTTLs(t, admin0, vm1.Keys)
			scripttest.AuditTTLs(t, admin1, vm1.Keys)
		})
	}
}
