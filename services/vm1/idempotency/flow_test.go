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
	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Same fingerprint: the stored response; another fingerprint: conflict; the
// record lives 24 h in Redis and in PostgreSQL.
func TestIdempotencySameAndDifferentFingerprint(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	req := idemtest.Request(t, vm1.IdemScopeMessageSend, `{"text":"hi"}`)
	var c idemtest.Counter
	resp := idemtest.Created()
	out, err := e.keeper.Do(ctx, req, c.Call(req.Key, resp, nil))
	if err != nil || out.Replayed || out.Source != idempotency.SourceExecuted || out.Response.Status != 201 {
		t.Fatalf("first: %+v %v", out, err)
	}
	if out.Response.Header.Get("Set-Cookie") != "" {
		t.Fatal("the outcome kept a header off the allow-list")
	}
	again, err := e.keeper.Do(ctx, req, c.Call(req.Key, resp, nil))
	if err != nil || !again.Replayed || again.Source != idempotency.SourceRedis {
		t.Fatalf("retry: %+v %v", again, err)
	}
	if diff := cmp.Diff(out.Response, again.Response); diff != "" {
		t.Fatalf("the retry's response differs:\n%s", diff)
	}
	other := req
	other.Fingerprint = idempotency.Fingerprint([]byte("POST"), []byte("/v1/messages"), []byte(`{"text":"bye"}`))
	if _, err := e.keeper.Do(ctx, other, c.Call(req.Key, resp, nil)); !errors.Is(err, idempotency.ErrConflict) || idempotency.StatusCode(err) != 422 {
		t.Fatalf("another fingerprint: %v", err)
	}
	// The same client key from another user is another record.
	otherUser := req
	otherUser.UserID = uuid.NewString()
	if out, err := e.keeper.Do(ctx, otherUser, c.Call(req.Key, resp, nil)); err != nil || out.Replayed {
		t.Fatalf("another user: %+v %v", out, err)
	}
	if c.Runs.Load() != 2 || e.sideEffects(t, req.Key) != 2 {
		t.Fatalf("runs %d, side effects %d; want 2 (one per user)", c.Runs.Load(), e.sideEffects(t, req.Key))
	}

	rec, _ := vm1.NewAPIIdemKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
	if ttl := e.db0.PTTL(ctx, rec.String()).Val(); ttl <= 24*time.Hour-time.Minute || ttl > 24*time.Hour {
		t.Fatalf("Redis record TTL %v, want 24h", ttl)
	}
	var left time.Duration
	if err := e.pool.QueryRow(ctx, `SELECT expires_at - now() FROM idempotency_records WHERE user_id = $1::uuid`, req.UserID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left <= 24*time.Hour-time.Minute || left > 24*time.Hour {
		t.Fatalf("durable row expires in %v, want 24h", left)
	}
	for result, want := range map[string]float64{"executed": 2, "hit": 1, "conflict": 1} {
		if got := outcomes(t, e, "message-send", result); got != want {
			t.Errorf("%s = %v, want %v", result, got, want)
		}
	}
	checkNoSecretsInMetrics(t, e, req)
}

// Many concurrent retries of one key: exactly one execution; the others are
// told it is in progress, and once it completed they get its response.
func TestIdempotencyConcurrentRetriesRunOnce(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	req := idemtest.Request(t, vm1.IdemScopeAttachmentInit, "file.png")
	var c idemtest.Counter
	var inProgress atomic.Int64
	const n = 50
	// The one execution waits until every other request has been answered, so
	// they all meet it in progress.
	fn := c.Call(req.Key, idemtest.Created(), func(context.Context) error {
		if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return inProgress.Load() == n-1 }) {
			return errors.New("the other requests never came back")
		}
		return nil
	})
	var wg sync.WaitGroup
	start := make(chan struct{})
	var executed atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out, err := e.keeper.Do(ctx, req, fn)
			switch {
			case errors.Is(err, idempotency.ErrInProgress):
				inProgress.Add(1)
			case err != nil:
				t.Error(err)
			case !out.Replayed:
				executed.Add(1)
			default:
				t.Errorf("a replay before the execution completed: %+v", out)
			}
		}()
	}
	close(start)
	wg.Wait()
	if c.Runs.Load() != 1 || executed.Load() != 1 || inProgress.Load() != n-1 {
		t.Fatalf("runs %d, executed %d, in progress %d", c.Runs.Load(), executed.Load(), inProgress.Load())
	}
	// Retries after the completion: all replays, still one execution.
	var replays atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := e.keeper.Do(ctx, req, fn); err == nil && out.Replayed {
				replays.Add(1)
			}
		}()
	}
	wg.Wait()
	if replays.Load() != n || c.Runs.Load() != 1 || e.sideEffects(t, req.Key) != 1 {
		t.Fatalf("replays %d, runs %d, side effects %d", replays.Load(), c.Runs.Load(), e.sideEffects(t, req.Key))
	}
}

// Redis loses everything while a call runs (FLUSHDB, or a restart without
// persistence); a retry meets the durable claim and is told the call is in
// progress, the call completes, and the side effect ran once.
func TestIdempotencyRedisLossMidRequestRunsOnce(t *testing.T) {
	t.Parallel()
	for _, loss := range []struct {
		name string
		lose func(*idemEnv)
	}{
		{"flushdb", func(e *idemEnv) { e.db0.FlushDB(context.Background()) }},
		{"restart-empty", func(e *idemEnv) { e.srv.Kill(); e.srv.Restart() }},
	} {
		t.Run(loss.name, func(t *testing.T) {
			ctx := scripttest.Context(t)
			e := newIdemEnv(t, 0)
			req := idemtest.Request(t, vm1.IdemScopeMessageSend, "hello")
			var c idemtest.Counter
			started, proceed := make(chan struct{}), make(chan struct{})
			letGo := sync.OnceFunc(func() { close(proceed) })
			defer letGo() // a failing test must not leave the call hanging
			fn := c.Call(req.Key, idemtest.Created(), func(context.Context) error {
				if c.Runs.Load() == 1 {
					close(started)
					<-proceed
				}
				return nil
			})
			type result struct {
				out idempotency.Outcome
				err error
			}
			first := make(chan result, 1)
			go func() {
				out, err := e.keeper.Do(ctx, req, fn)
				first <- result{out, err}
			}()
			<-started
			loss.lose(e)
			if n := e.db0.DBSize(ctx).Val(); n != 0 {
				t.Fatalf("Redis still holds %d keys", n)
			}
			if _, err := e.keeper.Do(ctx, req, fn); !errors.Is(err, idempotency.ErrInProgress) {
				t.Fatalf("retry during the call: %v, want ErrInProgress", err)
			}
			if n := e.db0.DBSize(ctx).Val(); n != 0 {
				t.Fatalf("the refused retry left %d keys in Redis", n)
			}
			letGo()
			r := <-first
			if r.err != nil || r.out.Replayed {
				t.Fatalf("the call: %+v %v", r.out, r.err)
			}
			again, err := e.keeper.Do(ctx, req, fn)
			if err != nil || !again.Replayed || again.Source != idempotency.SourceRedis || !cmp.Equal(again.Response, r.out.Response) {
				t.Fatalf("retry after the call: %+v %v", again, err)
			}
			if c.Runs.Load() != 1 || e.sideEffects(t, req.Key) != 1 {
				t.Fatalf("runs %d, side effects %d; want 1", c.Runs.Load(), e.sideEffects(t, req.Key))
			}
		})
	}
}

// A completed record survives FLUSHDB and an empty restart: the durable row
// answers and warms Redis (on access, or all at once with WarmRecent).
func TestIdempotencyCompletedSurvivesRedisLoss(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	req := idemtest.Request(t, vm1.IdemScopeDialogCreate, "dialog")
	var c idemtest.Counter
	out, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil))
	if err != nil {
		t.Fatal(err)
	}
	e.db0.FlushDB(ctx)
	back, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil))
	if err != nil || !back.Replayed || back.Source != idempotency.SourceDurable || !cmp.Equal(back.Response, out.Response) {
		t.Fatalf("after FLUSHDB: %+v %v", back, err)
	}
	rec, _ := vm1.NewAPIIdemKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
	lock, _ := vm1.NewAPIIdemLockKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
	if ttl := e.db0.PTTL(ctx, rec.String()).Val(); ttl <= 24*time.Hour-time.Minute || ttl > 24*time.Hour {
		t.Fatalf("warmed record TTL %v, want what is left of 24h", ttl)
	}
	if e.db0.Exists(ctx, lock.String()).Val() != 0 {
		t.Fatal("warming left the retry's reservation lock")
	}
	if hit, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil)); err != nil || hit.Source != idempotency.SourceRedis {
		t.Fatalf("after warming: %+v %v", hit, err)
	}

	e.srv.Kill()
	e.srv.Restart()
	if n, err := e.keeper.WarmRecent(ctx, 100); err != nil || n != 1 {
		t.Fatalf("WarmRecent: %d %v", n, err)
	}
	if hit, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil)); err != nil || hit.Source != idempotency.SourceRedis || !cmp.Equal(hit.Response, out.Response) {
		t.Fatalf("after an empty restart and WarmRecent: %+v %v", hit, err)
	}
	if c.Runs.Load() != 1 || e.sideEffects(t, req.Key) != 1 {
		t.Fatalf("runs %d, side effects %d", c.Runs.Load(), e.sideEffects(t, req.Key))
	}
	if got := outcomes(t, e, "dialog-create", "fallback"); got != 1 {
		t.Errorf("fallback = %v, want 1", got)
	}
}

// Seed 000 §10: with Redis down a new call fails closed (503) and does not run;
// a completed record still answers from PostgreSQL; a reused key still conflicts.
func TestIdempotencyRedisDownFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	done := idemtest.Request(t, vm1.IdemScopeProfileUpdate, "name=a")
	var c idemtest.Counter
	out, err := e.keeper.Do(ctx, done, c.Call(done.Key, idemtest.Created(), nil))
	if err != nil {
		t.Fatal(err)
	}
	scripttest.AuditTTLs(t, e.db0, vm1.Keys)
	e.srv.Kill()

	fresh := idemtest.Request(t, vm1.IdemScopeProfileUpdate, "name=b")
	_, err = e.keeper.Do(ctx, fresh, c.Call(fresh.Key, idemtest.Created(), nil))
	if !errors.Is(err, idempotency.ErrUnavailable) || idempotency.StatusCode(err) != 503 {
		t.Fatalf("a new call without Redis: %v, want ErrUnavailable (503)", err)
	}
	if e.durableState(t, fresh) != "" {
		t.Fatal("a call refused for want of Redis left a durable row")
	}
	back, err := e.keeper.Do(ctx, done, c.Call(done.Key, idemtest.Created(), nil))
	if err != nil || back.Source != idempotency.SourceDurable || !cmp.Equal(back.Response, out.Response) {
		t.Fatalf("a completed record without Redis: %+v %v", back, err)
	}
	reused := done
	reused.Fingerprint = fresh.Fingerprint
	if _, err := e.keeper.Do(ctx, reused, c.Call(done.Key, idemtest.Created(), nil)); !errors.Is(err, idempotency.ErrConflict) {
		t.Fatalf("a reused key without Redis: %v", err)
	}
	if c.Runs.Load() != 1 {
		t.Fatalf("runs %d, want 1", c.Runs.Load())
	}
	if got := outcomes(t, e, "profile-update", "unavailable"); got != 1 {
		t.Errorf("unavailable = %v, want 1", got)
	}
}

// 503 and 504 are never recorded: the call's transaction rolls back, Redis and
// PostgreSQL keep nothing, and a retry runs again. A call that returns an error
// is released the same way.
func TestIdempotencyTransientIsNotStored(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	for _, status := range []int{503, 504} {
		req := idemtest.Request(t, vm1.IdemScopeDownloadURL, "file-1")
		var c idemtest.Counter
		out, err := e.keeper.Do(ctx, req, c.Call(req.Key, idempotency.Response{Status: status, ErrorCode: "upstream.timeout"}, nil))
		if err != nil || out.Response.Status != status || out.Replayed {
			t.Fatalf("%d: %+v %v", status, out, err)
		}
		rec, _ := vm1.NewAPIIdemKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
		lock, _ := vm1.NewAPIIdemLockKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
		left := e.db0.Exists(ctx, rec.String(), lock.String()).Val()
		if e.durableState(t, req) != "" || left != 0 || e.sideEffects(t, req.Key) != 0 {
			t.Fatalf("%d left state behind: row %q, %d Redis keys, %d side effects", status, e.durableState(t, req), left, e.sideEffects(t, req.Key))
		}
		out, err = e.keeper.Do(ctx, req, c.Call(req.Key, idempotency.Response{Status: 200}, nil))
		if err != nil || out.Replayed || out.Response.Status != 200 {
			t.Fatalf("retry after %d: %+v %v", status, out, err)
		}
		if c.Runs.Load() != 2 || e.sideEffects(t, req.Key) != 1 {
			t.Fatalf("after %d: runs %d, side effects %d", status, c.Runs.Load(), e.sideEffects(t, req.Key))
		}
	}
	req := idemtest.Request(t, vm1.IdemScopeDownloadURL, "file-2")
	boom := errors.New("storage failed")
	var c idemtest.Counter
	if _, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), func(context.Context) error { return boom })); !errors.Is(err, boom) {
		t.Fatalf("a failing call: %v", err)
	}
	if e.durableState(t, req) != "" || e.db0.DBSize(ctx).Val() != 2 {
		t.Fatalf("a failing call left state behind: row %q, %d Redis keys (want the 2 completed records)", e.durableState(t, req), e.db0.DBSize(ctx).Val())
	}
	if out, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil)); err != nil || out.Replayed {
		t.Fatalf("retry after a failure: %+v %v", out, err)
	}
	if got := outcomes(t, e, "download-url", "transient"); got != 2 {
		t.Errorf("transient = %v, want 2", got)
	}
}

// A late owner: its lease ran out and its lock expired while its call hung;
// another request took the call over and completed it; the late owner's
// completion is refused and its transaction rolled back, so the side effect
// committed once.
func TestIdempotencyLateOwnerIsRolledBack(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	req := idemtest.Request(t, vm1.IdemScopeMessageSend, "late")
	var c idemtest.Counter
	started, proceed := make(chan struct{}), make(chan struct{})
	letGo := sync.OnceFunc(func() { close(proceed) })
	defer letGo() // a failing test must not leave the call hanging
	lateFn := c.Call(req.Key, idemtest.Created(), func(context.Context) error {
		close(started)
		<-proceed
		return nil
	})
	lateDone := make(chan error, 1)
	go func() {
		_, err := e.keeper.Do(ctx, req, lateFn)
		lateDone <- err
	}()
	<-started
	// The lease and the lock run out (the heartbeat, every 10 s, has not come).
	if _, err := e.pool.Exec(ctx, `UPDATE idempotency_records SET lease_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	lock, _ := vm1.NewAPIIdemLockKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
	e.db0.PExpire(ctx, lock.String(), time.Millisecond)
	if !redistest.WaitFor(ctx, time.Second, func() bool { return e.db0.Exists(ctx, lock.String()).Val() == 0 }) {
		t.Fatal("the lock did not expire")
	}
	taken, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil))
	if err != nil || taken.Replayed {
		t.Fatalf("takeover: %+v %v", taken, err)
	}
	letGo()
	if err := <-lateDone; !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("the late owner: %v, want ErrLeaseLost", err)
	}
	if c.Runs.Load() != 2 || e.sideEffects(t, req.Key) != 1 {
		t.Fatalf("runs %d, committed side effects %d; want 2 runs, 1 commit", c.Runs.Load(), e.sideEffects(t, req.Key))
	}
	again, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil))
	if err != nil || !cmp.Equal(again.Response, taken.Response) {
		t.Fatalf("a retry gets the takeover's response: %+v %v", again, err)
	}
}

// The heartbeat keeps a long call's lease (a retry meanwhile is told it is in
// progress), and when the lease is taken from it the call's context is
// cancelled and nothing commits.
func TestIdempotencyHeartbeat(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 300*time.Millisecond)
	req := idemtest.Request(t, vm1.IdemScopeAttachmentInit, "big")
	var leases []time.Time
	readLease := func() time.Time {
		var at time.Time
		if err := e.pool.QueryRow(ctx, `SELECT lease_until FROM idempotency_records`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	var c idemtest.Counter
	started := make(chan struct{})
	fn := c.Call(req.Key, idemtest.Created(), func(workCtx context.Context) error {
		close(started)
		<-workCtx.Done()
		return context.Cause(workCtx)
	})
	done := make(chan error, 1)
	go func() {
		_, err := e.keeper.Do(ctx, req, fn)
		done <- err
	}()
	<-started
	first := readLease()
	// Three renewals: the lease outlives its 300 ms many times over.
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool {
		l := readLease()
		if len(leases) == 0 || l.After(leases[len(leases)-1]) {
			leases = append(leases, l)
		}
		return len(leases) >= 4 && l.Sub(first) >= 600*time.Millisecond
	}) {
		t.Fatalf("the lease was not renewed: %v", leases)
	}
	if _, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil)); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("a retry while the call runs: %v", err)
	}
	// Someone else holds the claim now: the heartbeat notices and cancels the call.
	if _, err := e.pool.Exec(ctx, `UPDATE idempotency_records SET owner = 'another-owner-token'`); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("after the claim was taken: %v, want ErrLeaseLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call was not cancelled")
	}
	if c.Runs.Load() != 1 || e.sideEffects(t, req.Key) != 0 {
		t.Fatalf("runs %d, side effects %d", c.Runs.Load(), e.sideEffects(t, req.Key))
	}
}

// A corrupt Redis copy is never served: the durable row answers and rewrites it.
func TestIdempotencyCorruptRedisRecordIsRewritten(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	req := idemtest.Request(t, vm1.IdemScopeMessageSend, "x")
	var c idemtest.Counter
	out, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil))
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := vm1.NewAPIIdemKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
	good := e.db0.HGet(ctx, rec.String(), "response").Val()
	e.db0.HSet(ctx, rec.String(), "response", "\xc1\xff not messagepack")
	back, err := e.keeper.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil))
	if err != nil || back.Source != idempotency.SourceDurable || !cmp.Equal(back.Response, out.Response) {
		t.Fatalf("corrupt copy: %+v %v", back, err)
	}
	if got := e.db0.HGet(ctx, rec.String(), "response").Val(); got != good {
		t.Fatal("the corrupt copy was not rewritten")
	}
	if c.Runs.Load() != 1 {
		t.Fatalf("runs %d", c.Runs.Load())
	}
}

// Malformed requests are refused before Redis and PostgreSQL, naming the field.
func TestIdempotencyRefusesMalformedRequests(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	good := idemtest.Request(t, vm1.IdemScopeMessageSend, "x")
	var c idemtest.Counter
	for name, mutate := range map[string]func(*idempotency.Request){
		"empty key":       func(r *idempotency.Request) { r.Key = "" },
		"long key":        func(r *idempotency.Request) { r.Key = strings.Repeat("k", 256) },
		"control in key":  func(r *idempotency.Request) { r.Key = "a\nb" },
		"bad fingerprint": func(r *idempotency.Request) { r.Fingerprint = "xyz" },
		"unknown scope":   func(r *idempotency.Request) { r.Scope = "wire-transfer" },
		"forged user":     func(r *idempotency.Request) { r.UserID = "*:{x}" },
	} {
		r := good
		mutate(&r)
		_, err := e.keeper.Do(ctx, r, c.Call(good.Key, idemtest.Created(), nil))
		if !errors.Is(err, idempotency.ErrInvalidRequest) || idempotency.StatusCode(err) != 400 {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "{x}") {
			t.Errorf("%s: the error repeats the value: %v", name, err)
		}
	}
	if c.Runs.Load() != 0 || e.db0.DBSize(ctx).Val() != 0 {
		t.Fatalf("runs %d, Redis keys %d", c.Runs.Load(), e.db0.DBSize(ctx).Val())
	}
}

// outcomes is the value of han_api_idempotency_total{scope, result}.
func outcomes(t *testing.T, e *idemEnv, scope, result string) float64 {
	t.Helper()
	return promtest.Value(t, e.reg, "han_api_idempotency_total", map[string]string{"scope": scope, "result": result})
}

// checkNoSecretsInMetrics fails when a label value holds the user, the client's
// key or its HMAC.
func checkNoSecretsInMetrics(t *testing.T, e *idemEnv, req idempotency.Request) {
	t.Helper()
	promtest.Labels(t, e.reg, func(metric, label, v string) {
		if strings.Contains(v, req.UserID) || strings.Contains(v, req.Key) || strings.Contains(v, string(testHMACKey.Sum(req.Key))) {
			t.Errorf("metric %s label %s holds a secret", metric, label)
		}
	})
}

// With PostgreSQL unreachable nothing can be claimed durably: a new call fails
// closed (503), does not run, and its Redis reservation is released.
func TestIdempotencyPostgresDownFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	srv := redistest.Start(t)
	db0 := srv.Client(vm1.DB0)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: db0})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens on port 1: every connection is refused.
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	k, err := idempotency.New(scripts, idempotency.NewStore(pool), testHMACKey, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := idemtest.Request(t, vm1.IdemScopeMessageSend, "x")
	var c idemtest.Counter
	if _, err := k.Do(ctx, req, c.Call(req.Key, idemtest.Created(), nil)); !errors.Is(err, idempotency.ErrUnavailable) || idempotency.StatusCode(err) != 503 {
		t.Fatalf("without PostgreSQL: %v, want ErrUnavailable (503)", err)
	}
	if c.Runs.Load() != 0 || db0.DBSize(ctx).Val() != 0 {
		t.Fatalf("runs %d, Redis keys left %d", c.Runs.Load(), db0.DBSize(ctx).Val())
	}
}

// Redis restarts empty while a call runs; then a request with another payload
// (another fingerprint) and the call's identical retries arrive for the same
// key. The other payload is told 422 (key reused); every identical retry 409
// (in progress), never 422, although Redis then holds the other payload's
// reservation: Redis's "conflict" is checked against PostgreSQL, the truth
// (issue 21: 90-201 wrong 422s a run). First deterministically (the other
// payload's reservation made in Redis before it reaches PostgreSQL, as in its
// window), then 50 retries racing the other payload; replies counted exactly.
func TestIdempotencyEmptyRestartRetriesAreInProgressNotConflict(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	e := newIdemEnv(t, 0)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: e.db0})
	if err != nil {
		t.Fatal(err)
	}
	req := idemtest.Request(t, vm1.IdemScopeMessageSend, "hello")
	other := req
	other.Fingerprint = idempotency.Fingerprint([]byte("POST"), []byte("/v1/messages"), []byte("another payload"))
	var c idemtest.Counter
	started, proceed := make(chan struct{}), make(chan struct{})
	letGo := sync.OnceFunc(func() { close(proceed) })
	defer letGo()
	fn := c.Call(req.Key, idemtest.Created(), func(context.Context) error {
		if c.Runs.Load() == 1 {
			close(started)
			<-proceed
		}
		return nil
	})
	type result struct {
		out idempotency.Outcome
		err error
	}
	first := make(chan result, 1)
	go func() {
		out, err := e.keeper.Do(ctx, req, fn)
		first <- result{out, err}
	}()
	<-started
	e.srv.Kill()
	e.srv.Restart()
	if n := e.db0.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("Redis restarted with %d keys", n)
	}
	tally := func(n int, r idempotency.Request) map[int]int {
		var mu sync.Mutex
		got := map[int]int{}
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.keeper.Do(ctx, r, fn)
				mu.Lock()
				got[idempotency.StatusCode(err)]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		return got
	}

	// The other payload's reservation, as it stands in Redis before its
	// PostgreSQL claim.
	rec, _ := vm1.NewAPIIdemKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
	lock, _ := vm1.NewAPIIdemLockKey(req.Scope, req.UserID, testHMACKey.Sum(req.Key))
	res, err := scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: other.Fingerprint, Owner: "other-payload-owner"})
	if err != nil || res.State != vm1.IdemStateReserved {
		t.Fatalf("the other payload's reservation: %+v %v", res, err)
	}
	if got := tally(20, req); got[409] != 20 {
		t.Fatalf("20 identical retries while Redis holds the other payload's reservation: %v, want 20 x 409", got)
	}
	if got := tally(1, other); got[422] != 1 {
		t.Fatalf("the other payload: %v, want 1 x 422", got)
	}
	if _, err := scripts.IdemRelease(ctx, rec, lock, vm1.IdemReleaseArgs{Owner: "other-payload-owner"}); err != nil {
		t.Fatal(err)
	}

	// The race as it happens: 50 identical retries and the other payload at once.
	var wg sync.WaitGroup
	var otherGot map[int]int
	wg.Add(1)
	go func() { defer wg.Done(); otherGot = tally(1, other) }()
	retries := tally(50, req)
	wg.Wait()
	if retries[409] != 50 || otherGot[422] != 1 {
		t.Fatalf("racing: retries %v (want 50 x 409), the other payload %v (want 1 x 422)", retries, otherGot)
	}

	letGo()
	r := <-first
	if r.err != nil || r.out.Replayed {
		t.Fatalf("the call: %+v %v", r.out, r.err)
	}
	if got := tally(10, req); got[200] != 10 {
		t.Fatalf("retries after the call: %v, want 10 replays", got)
	}
	if got := tally(1, other); got[422] != 1 {
		t.Fatalf("the other payload after the call: %v, want 422", got)
	}
	if c.Runs.Load() != 1 || e.sideEffects(t, req.Key) != 1 {
		t.Fatalf("runs %d, side effects %d; want 1", c.Runs.Load(), e.sideEffects(t, req.Key))
	}
}
