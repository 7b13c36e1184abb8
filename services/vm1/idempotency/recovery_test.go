package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// A Redis that hangs past the caller's deadline is an outage, not a 500: a new
// call fails closed with ErrUnavailable (503) and does not run, whether go-redis
// gives up on the context's deadline or on its own read timeout after it. A
// caller that cancels gets its own context.Canceled.
func TestIdempotencyHungRedisPastTheDeadlineFailsClosed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts redis.Options
	}{
		{"context deadline", redis.Options{ContextTimeoutEnabled: true, ReadTimeout: time.Second}},
		{"read timeout after the deadline", redis.Options{ReadTimeout: 300 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			o.Addr, o.MaxRetries, o.DialTimeout, o.Protocol, o.DisableIdentity = redistest.Hung(t), -1, time.Second, 2, true
			client := redis.NewClient(&o)
			t.Cleanup(func() { _ = client.Close() })
			scripts, err := vm1.NewScripts(vm1.Clients{DB0: client})
			if err != nil {
				t.Fatal(err)
			}
			pool := idemtest.Postgres(t)
			k, err := idempotency.New(scripts, idempotency.NewStore(pool), testHMACKey, idempotency.Options{})
			if err != nil {
				t.Fatal(err)
			}
			req := idemtest.Request(t, vm1.IdemScopeMessageSend, "hung")
			var calls idemtest.Counter
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err = k.Do(ctx, req, calls.Call(req.Key, idemtest.Created(), nil))
			if !errors.Is(err, idempotency.ErrUnavailable) || idempotency.StatusCode(err) != 503 {
				t.Fatalf("a hung Redis past the deadline: %v (status %d), want ErrUnavailable (503)", err, idempotency.StatusCode(err))
			}
			cctx, ccancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, ccancel)
			if _, err := k.Do(cctx, req, calls.Call(req.Key, idemtest.Created(), nil)); !errors.Is(err, context.Canceled) || errors.Is(err, idempotency.ErrUnavailable) {
				t.Fatalf("cancelled by the caller: %v, want context.Canceled", err)
			}
			if calls.Runs.Load() != 0 {
				t.Fatalf("the call ran %d times", calls.Runs.Load())
			}
			var rows int
			if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_records`).Scan(&rows); err != nil || rows != 0 {
				t.Fatalf("%d durable rows (%v), want none", rows, err)
			}
		})
	}
}

// The durable row's completion and its 24 h run from when the call completed,
// not from when its transaction began (now() in PostgreSQL), however long the
// call ran.
func TestIdempotencyCompletedAtIsTheCompletion(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	req := idemtest.Request(t, vm1.IdemScopeAttachmentInit, "slow")
	var txStart, fnEnd time.Time
	_, err := e.keeper.Do(ctx, req, func(ctx context.Context, tx pgx.Tx) (idempotency.Response, error) {
		if err := tx.QueryRow(ctx, `SELECT transaction_timestamp()`).Scan(&txStart); err != nil {
			return idempotency.Response{}, err
		}
		// The call takes 300 ms by PostgreSQL's own clock.
		if !redistest.WaitFor(ctx, 5*time.Second, func() bool {
			var ran time.Duration
			return tx.QueryRow(ctx, `SELECT clock_timestamp() - transaction_timestamp()`).Scan(&ran) == nil && ran >= 300*time.Millisecond
		}) {
			return idempotency.Response{}, errors.New("the clock did not move")
		}
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&fnEnd); err != nil {
			return idempotency.Response{}, err
		}
		return idemtest.Created(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var completedAt, expiresAt time.Time
	if err := e.pool.QueryRow(ctx, `SELECT completed_at, expires_at FROM idempotency_records`).Scan(&completedAt, &expiresAt); err != nil {
		t.Fatal(err)
	}
	if completedAt.Before(fnEnd) {
		t.Fatalf("completed_at is %v before the call ended (its transaction began %v before)", fnEnd.Sub(completedAt), fnEnd.Sub(txStart))
	}
	if got := expiresAt.Sub(completedAt); got != vm1.APIIdemTTL {
		t.Fatalf("expires_at is completed_at + %v, want %v", got, vm1.APIIdemTTL)
	}
	// The Redis record and the durable row end within a second of each other.
	rec, _ := vm1.NewAPIIdemKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
	var left time.Duration
	if err := e.pool.QueryRow(ctx, `SELECT expires_at - now() FROM idempotency_records`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if d := (e.db0.PTTL(ctx, rec.String()).Val() - left).Abs(); d > time.Second {
		t.Fatalf("the Redis record and the durable row end %v apart", d)
	}
}

// After FLUSHDB, a retry with another fingerprint is a conflict answered from
// the durable row (422), does not run, and warms Redis back with the original
// record, which then answers the original request.
func TestIdempotencyFlushThenAnotherFingerprintConflicts(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	req := idemtest.Request(t, vm1.IdemScopeMessageSend, `{"text":"hi"}`)
	var c idemtest.Counter
	out, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db0.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	other := req
	other.Fingerprint = idempotency.Fingerprint([]byte("POST"), []byte("/v1/messages"), []byte(`{"text":"bye"}`))
	if _, err := e.keeper.Do(ctx, other, c.Call(req.Key, idemtest.Created(), nil)); !errors.Is(err, idempotency.ErrConflict) || idempotency.StatusCode(err) != 422 {
		t.Fatalf("another fingerprint after FLUSHDB: %v, want ErrConflict (422)", err)
	}
	lock, _ := vm1.NewAPIIdemLockKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
	if e.db0.Exists(ctx, lock.String()).Val() != 0 {
		t.Fatal("the refused request left its reservation lock")
	}
	if e.durableState(t, req) != "completed" {
		t.Fatalf("the durable row is %q, want completed", e.durableState(t, req))
	}
	hit, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil))
	if err != nil || hit.Source != idempotency.SourceRedis || !cmp.Equal(hit.Response, out.Response) {
		t.Fatalf("the original request after the conflict: %+v %v, want the warmed Redis record", hit, err)
	}
	if c.Runs.Load() != 1 || e.sideEffects(t, req.Key) != 1 {
		t.Fatalf("runs %d, side effects %d; want 1", c.Runs.Load(), e.sideEffects(t, req.Key))
	}
	if got := outcomes(t, e, "message-send", "conflict"); got != 1 {
		t.Errorf("conflict = %v, want 1", got)
	}
}

// killBeforeComplete kills the server just before the first idem_complete
// reaches it: after the durable commit, before Redis hears of it.
type killBeforeComplete struct {
	srv   *redistest.Server
	once  sync.Once
	fired atomic.Bool
}

func (h *killBeforeComplete) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *killBeforeComplete) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && strings.EqualFold(cmd.Name(), "evalsha") && a[1] == vm1.IdemCompleteScript.SHA1() {
			h.once.Do(func() {
				h.srv.Kill()
				h.fired.Store(true)
			})
		}
		return next(ctx, cmd)
	}
}

func (h *killBeforeComplete) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Redis dies between the durable commit and idem_complete. The call has
// committed and answers; a retry after Redis comes back (empty, or from its
// AOF with the reservation still in progress) replays the durable row, warms
// Redis, and the side effect ran once.
func TestIdempotencyRedisKilledBetweenCommitAndComplete(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts []redistest.Option
		// what Redis holds for the record after the restart
		state string
	}{
		{"restart empty", nil, ""},
		{"restart from the AOF", []redistest.Option{redistest.WithAOF()}, "in_progress"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := scripttest.Context(t)
			e := newIdemEnv(t, 0, c.opts...)
			hook := &killBeforeComplete{srv: e.srv}
			e.db0.AddHook(hook)
			req := idemtest.Request(t, vm1.IdemScopeDialogCreate, "dialog")
			var calls idemtest.Counter
			out, err := e.keeper.Do(ctx, req, calls.Call(req.Key, idemtest.Created(), nil))
			if err != nil || out.Replayed || !hook.fired.Load() {
				t.Fatalf("the call: %+v %v (Redis killed: %v)", out, err, hook.fired.Load())
			}
			if e.durableState(t, req) != "completed" {
				t.Fatalf("the durable row is %q, want completed", e.durableState(t, req))
			}
			e.srv.Restart()
			rec, _ := vm1.NewAPIIdemKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
			if got := e.db0.HGet(ctx, rec.String(), "state").Val(); got != c.state {
				t.Fatalf("Redis holds the record as %q after the restart, want %q", got, c.state)
			}
			back, err := e.keeper.Do(ctx, req, calls.Call(req.Key, idemtest.Created(), nil))
			if err != nil || !back.Replayed || back.Source != idempotency.SourceDurable || !cmp.Equal(back.Response, out.Response) {
				t.Fatalf("the retry: %+v %v, want the durable row's response", back, err)
			}
			if got := e.db0.HGet(ctx, rec.String(), "state").Val(); got != "completed" {
				t.Fatalf("Redis holds the record as %q after the retry, want it warmed (completed)", got)
			}
			hit, err := e.keeper.Do(ctx, req, calls.Call(req.Key, idemtest.Created(), nil))
			if err != nil || hit.Source != idempotency.SourceRedis || !cmp.Equal(hit.Response, out.Response) {
				t.Fatalf("the next retry: %+v %v, want the warmed Redis record", hit, err)
			}
			if calls.Runs.Load() != 1 || e.sideEffects(t, req.Key) != 1 {
				t.Fatalf("runs %d, side effects %d; want 1", calls.Runs.Load(), e.sideEffects(t, req.Key))
			}
		})
	}
}

// The durable commit fails (here a deferred constraint the call's own writes
// break, checked only at COMMIT): nothing is recorded, the call's side effects
// roll back, the reservation and the claim are released (503: try again), and
// a retry runs the call again, which then commits once.
func TestIdempotencyCommitFailureIsNotRecorded(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	if _, err := e.pool.Exec(ctx, `CREATE TABLE once_per_commit (id int, CONSTRAINT once UNIQUE (id) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	req := idemtest.Request(t, vm1.IdemScopeProfileUpdate, "name=c")
	var calls idemtest.Counter
	call := calls.Call(req.Key, idemtest.Created(), nil)
	fn := func(ctx context.Context, tx pgx.Tx) (idempotency.Response, error) {
		resp, err := call(ctx, tx)
		if err == nil && calls.Runs.Load() == 1 { // the first run breaks its own commit
			_, err = tx.Exec(ctx, `INSERT INTO once_per_commit VALUES (1), (1)`)
		}
		return resp, err
	}
	_, err := e.keeper.Do(ctx, req, fn)
	if !errors.Is(err, idempotency.ErrUnavailable) || idempotency.StatusCode(err) != 503 || !strings.Contains(err.Error(), "not recorded") {
		t.Fatalf("a failed commit: %v, want ErrUnavailable (503), not recorded", err)
	}
	if e.durableState(t, req) != "" || e.sideEffects(t, req.Key) != 0 || e.db0.DBSize(ctx).Val() != 0 {
		t.Fatalf("a failed commit left state: row %q, %d side effects, %d Redis keys", e.durableState(t, req), e.sideEffects(t, req.Key), e.db0.DBSize(ctx).Val())
	}
	out, err := e.keeper.Do(ctx, req, fn)
	if err != nil || out.Replayed || out.Source != idempotency.SourceExecuted {
		t.Fatalf("the retry: %+v %v, want it to run", out, err)
	}
	if again, err := e.keeper.Do(ctx, req, fn); err != nil || !again.Replayed {
		t.Fatalf("a retry after the commit: %+v %v", again, err)
	}
	if calls.Runs.Load() != 2 || e.sideEffects(t, req.Key) != 1 {
		t.Fatalf("runs %d, side effects %d; want 2 runs, 1 commit", calls.Runs.Load(), e.sideEffects(t, req.Key))
	}
	if got := outcomes(t, e, "profile-update", "unavailable"); got != 1 {
		t.Errorf("unavailable = %v, want 1", got)
	}
}
