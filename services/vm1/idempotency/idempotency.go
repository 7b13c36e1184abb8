// Package idempotency runs api-backend's mutating calls once per
// Idempotency-Key (seed 000 §4, §9, §10, §11): the side effects a call makes
// through its transaction commit at most once, and retries get its stored answer.
//
// PostgreSQL is the truth and Redis the accelerator. Keeper.Do reserves the key
// in Redis (idem_reserve: record han:api:idem:*, lock han:api:idemlock:*), then
// claims the durable row in idempotency_records, runs the call in a transaction
// of its own and records the outcome in that same transaction, so the outcome is
// stored exactly when the call's side effects commit; only then does Redis get
// the completed record (idem_complete). A retry answers from Redis; when Redis
// lost the record (eviction, FLUSHDB, an empty restore), the durable row answers
// and warms Redis back (idem_warm). A claim taken over after a lost lease makes
// the late owner's transaction roll back.
//
// A transient 503 or 504, or an error from the call, is never recorded: the
// reservation and the claim are released and a retry runs again. With Redis
// unavailable (degraded.Unavailable: down, timed out, past the caller's deadline,
// loading, out of memory) a call fails closed with an error matching
// ErrUnavailable (503), while a completed record is still answered from
// PostgreSQL. A refusal by Redis (NOPERM, a script error, a reply of the wrong
// shape) and the caller's own cancellation are returned as errors.
//
// The stored Response has no body and no field for tokens, cookies, presigned
// URLs or personal data; its headers pass an allow-list. Outcomes are counted by
// scope and result on the Registerer of Options, never by user or key.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/runtime/keypart"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// Errors callers match with errors.Is; StatusCode maps them to HTTP.
var (
	// ErrInvalidRequest: a Request field is malformed (scope, user, key, fingerprint).
	ErrInvalidRequest = errors.New("invalid idempotent request")
	// ErrConflict: the key was used with another request (another fingerprint).
	ErrConflict = errors.New("idempotency key reused with another request")
	// ErrInProgress: another request with this key is running now; retry later.
	ErrInProgress = errors.New("idempotent request in progress")
	// ErrUnavailable: Redis or PostgreSQL could not answer and the call cannot run
	// safely; answer 503 (seed 000 §10).
	ErrUnavailable = errors.New("idempotency store unavailable")
	// ErrLeaseLost: the call ran too long without its lease, another request took
	// it over, and this call's transaction was rolled back.
	ErrLeaseLost = errors.New("idempotency lease lost to another request")
)

// Source says where an Outcome's response comes from.
type Source string

const (
	// SourceExecuted: the call ran now.
	SourceExecuted Source = "executed"
	// SourceRedis: a retry answered from the Redis record.
	SourceRedis Source = "redis"
	// SourceDurable: a retry answered from the PostgreSQL row (Redis lost the
	// record, holds an unreadable copy, or is down).
	SourceDurable Source = "durable"
)

// Request identifies one idempotent call.
type Request struct {
	// Scope is the kind of call (enum idem_scope of keyspec.yaml).
	Scope vm1.IdemScope
	// UserID is the caller's canonical lower-case UUID.
	UserID string
	// Key is the client's Idempotency-Key: 1..255 visible ASCII characters. Only
	// its HMAC reaches Redis and PostgreSQL.
	Key string
	// Fingerprint is the hex SHA-256 of the request (see Fingerprint): the same
	// key with another fingerprint is ErrConflict.
	Fingerprint string
}

// Outcome is the answer to a call.
type Outcome struct {
	// Response is what the call answered, sanitized (Response.Sanitized).
	Response Response
	// Replayed reports an answer from a stored record: the call did not run now.
	Replayed bool
	// Source says where Response comes from.
	Source Source
	// Version is the record's version in its source.
	Version int64
}

// Func is the idempotent call. It runs inside tx, a transaction whose commit
// also records the outcome: side effects made through tx happen exactly when the
// outcome is stored. Side effects outside tx may run again if the outcome cannot
// be stored. Returning an error (or a 503/504 Response) rolls tx back and
// releases the key for a retry; ctx is cancelled when the lease is lost.
type Func func(ctx context.Context, tx pgx.Tx) (Response, error)

// Options configure a Keeper. The zero value is valid.
type Options struct {
	// Registerer receives han_api_idempotency_total and
	// han_api_idempotency_redis_errors_total. Nil registers them nowhere: the
	// outcomes are counted but exported nowhere.
	Registerer prometheus.Registerer
	// Lease is how long a claim lives without a heartbeat, 100ms..30s (default
	// 30 s, the Redis lock's TTL); the heartbeat renews it every Lease/3.
	Lease time.Duration
}

// Keeper runs idempotent calls. It is safe for concurrent use.
type Keeper struct {
	scripts *vm1.Scripts
	store   *Store
	hmac    secrets.HMACKey
	metrics *metrics
	lease   time.Duration
}

// New returns a Keeper that reserves keys through scripts (which need a DB0
// client) and records outcomes in store; keyHMAC hashes the client's
// Idempotency-Key (build it with secrets.NewHMACKey from a secret in the
// service's config; the zero key is refused). It validates o.
func New(scripts *vm1.Scripts, store *Store, keyHMAC secrets.HMACKey, o Options) (*Keeper, error) {
	if scripts == nil {
		scripts = &vm1.Scripts{} // every call fails with runtime.ErrNoClient
	}
	if store == nil {
		return nil, errors.New("idempotency: nil Store; build it with NewStore")
	}
	if keyHMAC.IsZero() {
		return nil, errors.New("idempotency: the key HMAC is the zero key; build it with secrets.NewHMACKey")
	}
	if o.Lease == 0 {
		o.Lease = vm1.APIIdemLockTTL
	}
	if o.Lease < 100*time.Millisecond || o.Lease > vm1.APIIdemLockTTL {
		return nil, fmt.Errorf("idempotency: Lease %s: want 100ms..%s (the Redis lock's TTL)", o.Lease, vm1.APIIdemLockTTL)
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("idempotency: metrics: %w", err)
	}
	return &Keeper{scripts: scripts, store: store, hmac: keyHMAC, metrics: m, lease: o.Lease}, nil
}

// Fingerprint is the hex SHA-256 of parts (e.g. method, route, canonical body),
// each length-prefixed so that no two different lists of parts collide.
func Fingerprint(parts ...[]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keys are a request's Redis keys and durable identity.
type keys struct {
	id     recordID
	record vm1.APIIdemKey
	lock   vm1.APIIdemLockKey
}

func (k *Keeper) keysOf(req Request) (keys, error) {
	if len(req.Key) == 0 || len(req.Key) > 255 || !visible(req.Key, false) {
		return keys{}, fmt.Errorf("idempotency: key: want 1..255 visible ASCII characters: %w", ErrInvalidRequest)
	}
	if !keypart.Hex(req.Fingerprint, 64) {
		return keys{}, fmt.Errorf("idempotency: fingerprint: want 64 lower-case hex characters: %w", ErrInvalidRequest)
	}
	h := k.hmac.Sum(req.Key)
	rec, err := vm1.NewAPIIdemKey(req.Scope, req.UserID, h)
	if err != nil {
		return keys{}, fmt.Errorf("idempotency: %w: %w", ErrInvalidRequest, err)
	}
	lock, err := vm1.NewAPIIdemLockKey(req.Scope, req.UserID, h)
	if err != nil {
		return keys{}, fmt.Errorf("idempotency: %w: %w", ErrInvalidRequest, err)
	}
	return keys{id: recordID{scope: req.Scope, userID: req.UserID, keyHMAC: h}, record: rec, lock: lock}, nil
}

// token is a random owner token for the Redis lock and the durable claim.
func token() string {
	var b [18]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Do runs fn for the first request with req's key and records its outcome; a
// retry with the same fingerprint gets the stored Response (Outcome.Replayed), a
// concurrent one ErrInProgress, one with another fingerprint ErrConflict. fn runs
// again only when no outcome was recorded (a 503/504, an error, a lost lease),
// and fn's transaction commits at most once per key.
func (k *Keeper) Do(ctx context.Context, req Request, fn Func) (Outcome, error) {
	ks, err := k.keysOf(req)
	if err != nil {
		return Outcome{}, err
	}
	owner := token()
	rctx, cancel := redisBudget(ctx)
	res, err := k.scripts.IdemReserve(rctx, ks.record, ks.lock, vm1.IdemReserveArgs{Fingerprint: req.Fingerprint, Owner: owner})
	cancel()
	if err != nil && degraded.Unavailable(err) && !errors.Is(err, context.Canceled) {
		// The reservation may still run after we gave up on it: release it in the
		// background (compare-and-delete on our owner token, harmless otherwise)
		// so a retry is not told "in progress" for the lock's whole TTL.
		go k.releaseOrphan(ks, owner)
	}
	if err != nil {
		if cerr := ctx.Err(); errors.Is(cerr, context.Canceled) && !errors.Is(err, context.Canceled) {
			err = fmt.Errorf("%w: %w", cerr, err) // the client reported its own timeout after the caller gave up
		}
		if !degraded.Unavailable(err) {
			// The caller gave up, or Redis refused the call (NOPERM, a script
			// error, a reply of the wrong shape): a bug or a misconfiguration,
			// never read as an outage.
			return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, err)
		}
		// Redis cannot answer (down, timed out, the caller's deadline passed,
		// loading, out of memory): fail closed, but a completed record can
		// still be answered from PostgreSQL.
		k.metrics.redisError("reserve")
		return k.withoutRedis(ctx, req, ks, err)
	}
	switch res.State {
	case vm1.IdemStateCompleted:
		var resp Response
		if err := resp.UnmarshalMsgpack(res.Response); err != nil {
			// An unreadable copy: the durable row is the truth and rewrites it.
			k.metrics.redisError("corrupt_record")
			return k.fromDurable(ctx, req, ks, err)
		}
		k.metrics.outcome(req.Scope, resultHit)
		return Outcome{Response: resp, Replayed: true, Source: SourceRedis, Version: res.Version}, nil
	case vm1.IdemStateConflict:
		// Redis holds another fingerprint. After Redis lost its records (an
		// empty restart, a flush) that may be another payload's reservation made
		// while this request's own call still runs: the durable row decides.
		return k.conflictFromDurable(ctx, req, ks)
	case vm1.IdemStateInProgress:
		// Redis may be behind the truth (a completion whose Redis write failed).
		return k.fromDurable(ctx, req, ks, nil)
	}
	return k.execute(ctx, req, ks, owner, fn)
}

// redisBudget gives the Redis reservation at most half of the caller's remaining
// time, so that a slow Redis leaves the other half for answering a completed call
// from PostgreSQL (seed 000 §10) instead of failing it closed. It bounds the call
// only on clients that honour context deadlines (go-redis ContextTimeoutEnabled).
func redisBudget(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithTimeout(ctx, time.Until(dl)/2)
	}
	return ctx, func() {}
}

// orphanReleaseTimeout bounds the background release of a reservation whose
// reply never came.
const orphanReleaseTimeout = 5 * time.Second

func (k *Keeper) releaseOrphan(ks keys, owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), orphanReleaseTimeout)
	defer cancel()
	if _, err := k.scripts.IdemRelease(ctx, ks.record, ks.lock, vm1.IdemReleaseArgs{Owner: owner}); err != nil {
		k.metrics.redisError("release_orphan")
	}
}

// withoutRedis answers a completed record from PostgreSQL while Redis is down,
// and fails closed for everything else.
func (k *Keeper) withoutRedis(ctx context.Context, req Request, ks keys, redisErr error) (Outcome, error) {
	d, found, err := k.store.get(ctx, ks.id)
	switch {
	case err != nil:
		k.metrics.outcome(req.Scope, resultUnavailable)
		return Outcome{}, fmt.Errorf("idempotency %s: %w: redis: %w; postgres: %w", req.Scope, ErrUnavailable, redisErr, err)
	case found && d.state == vm1.IdemStateCompleted:
		return k.fromCompleted(req, d)
	}
	k.metrics.outcome(req.Scope, resultUnavailable)
	return Outcome{}, fmt.Errorf("idempotency %s: %w: %w", req.Scope, ErrUnavailable, redisErr)
}

// fromDurable answers from PostgreSQL when Redis says "in progress" or holds an
// unreadable copy (corrupt, non-nil): a completed row is replayed and warms
// Redis; a row of another fingerprint is ErrConflict; otherwise the call is in
// progress.
func (k *Keeper) fromDurable(ctx context.Context, req Request, ks keys, corrupt error) (Outcome, error) {
	d, found, err := k.store.get(ctx, ks.id)
	if err != nil {
		k.metrics.outcome(req.Scope, resultUnavailable)
		return Outcome{}, fmt.Errorf("idempotency %s: %w: %w", req.Scope, ErrUnavailable, err)
	}
	if found && d.state == vm1.IdemStateCompleted {
		k.warm(ctx, ks, token(), d)
		return k.fromCompleted(req, d)
	}
	if found && d.fingerprint != req.Fingerprint {
		// Another payload's call holds the durable claim: this key is reused.
		k.metrics.outcome(req.Scope, resultConflict)
		return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, ErrConflict)
	}
	if corrupt != nil {
		return Outcome{}, fmt.Errorf("idempotency %s: stored response: %w", req.Scope, corrupt)
	}
	k.metrics.outcome(req.Scope, resultInProgress)
	return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, ErrInProgress)
}

// conflictFromDurable answers a request whose key Redis holds for another
// fingerprint, by the durable row: ErrConflict (422) when the row holds another
// fingerprint; for a row of req's own fingerprint, its stored response when it
// completed (Redis is warmed back) and ErrInProgress (409) while it runs; and
// ErrInProgress when there is no row (the other fingerprint has reserved the
// key in Redis but claimed nothing yet: the outcome is not decided, a retry
// learns it). A 422 is final for a client, so it is never answered on Redis's
// word alone.
func (k *Keeper) conflictFromDurable(ctx context.Context, req Request, ks keys) (Outcome, error) {
	d, found, err := k.store.get(ctx, ks.id)
	switch {
	case err != nil:
		k.metrics.outcome(req.Scope, resultUnavailable)
		return Outcome{}, fmt.Errorf("idempotency %s: %w: %w", req.Scope, ErrUnavailable, err)
	case found && d.fingerprint != req.Fingerprint:
		k.metrics.outcome(req.Scope, resultConflict)
		return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, ErrConflict)
	case found && d.state == vm1.IdemStateCompleted:
		k.warm(ctx, ks, token(), d)
		return k.fromCompleted(req, d)
	}
	k.metrics.outcome(req.Scope, resultInProgress)
	return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, ErrInProgress)
}

// fromCompleted answers req from a completed durable row: ErrConflict when the
// row holds another fingerprint, else the row's stored response (a fallback).
func (k *Keeper) fromCompleted(req Request, d durable) (Outcome, error) {
	if d.fingerprint != req.Fingerprint {
		k.metrics.outcome(req.Scope, resultConflict)
		return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, ErrConflict)
	}
	var resp Response
	if err := resp.UnmarshalMsgpack(d.response); err != nil {
		return Outcome{}, fmt.Errorf("idempotency %s: durable record: %w", req.Scope, err)
	}
	k.metrics.outcome(req.Scope, resultFallback)
	return Outcome{Response: resp, Replayed: true, Source: SourceDurable, Version: d.version}, nil
}

// warm writes a completed durable row back to Redis and drops owner's
// reservation; Redis is an accelerator, so a failure is only counted.
func (k *Keeper) warm(ctx context.Context, ks keys, owner string, d durable) {
	_, err := k.scripts.IdemWarm(ctx, ks.record, ks.lock, vm1.IdemWarmArgs{
		Owner: owner, Fingerprint: d.fingerprint, Status: int64(d.status), Response: d.response,
		ResourceID: d.resourceID, Version: d.version, TTL: min(d.ttl, vm1.APIIdemTTL),
	})
	if err != nil {
		k.metrics.redisError("warm")
	}
}

// release drops owner's reservation in Redis and its claim in PostgreSQL, even
// when ctx is already cancelled, so a retry can run the call again.
func (k *Keeper) release(ctx context.Context, ks keys, owner string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := k.scripts.IdemRelease(ctx, ks.record, ks.lock, vm1.IdemReleaseArgs{Owner: owner}); err != nil {
		k.metrics.redisError("release")
	}
	// A claim left behind expires with its lease; a retry then takes it over.
	_ = k.store.release(ctx, ks.id, owner)
}

// execute runs fn for the owner of a fresh Redis reservation, once it holds the
// durable claim too.
func (k *Keeper) execute(ctx context.Context, req Request, ks keys, owner string, fn Func) (out Outcome, err error) {
	claimed, _, d, err := k.store.claim(ctx, ks.id, req.Fingerprint, owner, k.lease)
	if err != nil {
		k.release(ctx, ks, owner)
		k.metrics.outcome(req.Scope, resultUnavailable)
		return Outcome{}, fmt.Errorf("idempotency %s: %w: %w", req.Scope, ErrUnavailable, err)
	}
	if !claimed {
		switch {
		case d.state == vm1.IdemStateCompleted:
			// Redis had lost the record: the truth answers and warms it back.
			k.warm(ctx, ks, owner, d)
			return k.fromCompleted(req, d)
		case d.fingerprint != req.Fingerprint:
			k.release(ctx, ks, owner)
			k.metrics.outcome(req.Scope, resultConflict)
			return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, ErrConflict)
		default:
			// Another request holds a live claim (Redis had lost its reservation).
			k.release(ctx, ks, owner)
			k.metrics.outcome(req.Scope, resultInProgress)
			return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, ErrInProgress)
		}
	}

	completed := false
	defer func() {
		if !completed {
			k.release(ctx, ks, owner)
		}
	}()
	tx, err := k.store.begin(ctx)
	if err != nil {
		k.metrics.outcome(req.Scope, resultUnavailable)
		return Outcome{}, fmt.Errorf("idempotency %s: %w: %w", req.Scope, ErrUnavailable, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit

	workCtx, cancelWork := context.WithCancelCause(ctx)
	defer cancelWork(nil)
	stopHeartbeat := k.heartbeat(workCtx, cancelWork, ks, owner)
	resp, err := func() (Response, error) {
		defer stopHeartbeat()
		return fn(workCtx, tx)
	}()
	if cause := context.Cause(workCtx); errors.Is(cause, ErrLeaseLost) {
		completed = true // not ours to release any more
		k.metrics.outcome(req.Scope, resultLeaseLost)
		return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, ErrLeaseLost)
	}
	if err != nil {
		k.metrics.outcome(req.Scope, resultFailed)
		return Outcome{}, err
	}
	resp = resp.Sanitized()
	if resp.Status == http.StatusServiceUnavailable || resp.Status == http.StatusGatewayTimeout {
		// Transient: nothing is recorded, tx rolls back, a retry runs again.
		k.metrics.outcome(req.Scope, resultTransient)
		return Outcome{Response: resp, Source: SourceExecuted}, nil
	}
	payload, err := resp.MarshalMsgpack()
	if err != nil {
		k.metrics.outcome(req.Scope, resultFailed)
		return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, err)
	}
	version, err := k.store.complete(ctx, tx, ks.id, owner, resp.Status, payload, resp.ResourceID)
	if errors.Is(err, errLeaseLost) {
		completed = true
		k.metrics.outcome(req.Scope, resultLeaseLost)
		return Outcome{}, fmt.Errorf("idempotency %s: %w", req.Scope, ErrLeaseLost)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		k.metrics.outcome(req.Scope, resultUnavailable)
		return Outcome{}, fmt.Errorf("idempotency %s: outcome not recorded, rolled back: %w: %w", req.Scope, ErrUnavailable, err)
	}
	completed = true

	// The truth is written; Redis now answers retries fast. This runs even when
	// the caller has gone away, or retries would find an in-progress record.
	bg, cancelBG := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelBG()
	_, err = k.scripts.IdemComplete(bg, ks.record, ks.lock, vm1.IdemCompleteArgs{
		Owner: owner, Fingerprint: req.Fingerprint, Status: int64(resp.Status), Response: payload, ResourceID: resp.ResourceID,
	})
	if err != nil {
		// The reservation was lost (FLUSHDB, expiry) or Redis failed: warm instead.
		if !errors.Is(err, vm1.ErrNotOwner) {
			k.metrics.redisError("complete")
		}
		k.warm(bg, ks, owner, durable{
			fingerprint: req.Fingerprint, state: vm1.IdemStateCompleted, status: resp.Status,
			response: payload, resourceID: resp.ResourceID, version: version, ttl: vm1.APIIdemTTL,
		})
	}
	k.metrics.outcome(req.Scope, resultExecuted)
	return Outcome{Response: resp, Source: SourceExecuted, Version: version}, nil
}

// heartbeat renews the Redis lock and the durable lease every lease/3 until the
// returned stop is called; when the durable lease is lost it cancels the work
// with ErrLeaseLost. A Redis failure is only counted: the durable lease is the one
// that decides.
func (k *Keeper) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, ks keys, owner string) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(k.lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if ok, err := k.scripts.IdemExtend(ctx, ks.lock, vm1.IdemExtendArgs{Owner: owner}); err != nil || !ok {
				k.metrics.redisError("extend")
			}
			if err := k.store.extend(ctx, ks.id, owner, k.lease); errors.Is(err, errLeaseLost) {
				cancel(ErrLeaseLost)
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// WarmRecent writes up to limit of the newest completed durable records back
// to Redis, e.g. after an empty restore (seed 000 §10: api-backend warms
// idempotency from the durable records). It reports how many it wrote.
func (k *Keeper) WarmRecent(ctx context.Context, limit int) (int, error) {
	rows, err := k.store.recentCompleted(ctx, limit)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		rec, err := vm1.NewAPIIdemKey(r.id.scope, r.id.userID, r.id.keyHMAC)
		if err != nil {
			return n, fmt.Errorf("idempotency: warm: %w", err)
		}
		lock, err := vm1.NewAPIIdemLockKey(r.id.scope, r.id.userID, r.id.keyHMAC)
		if err != nil {
			return n, fmt.Errorf("idempotency: warm: %w", err)
		}
		if _, err := k.scripts.IdemWarm(ctx, rec, lock, vm1.IdemWarmArgs{
			Owner: token(), Fingerprint: r.rec.fingerprint, Status: int64(r.rec.status), Response: r.rec.response,
			ResourceID: r.rec.resourceID, Version: r.rec.version, TTL: min(r.rec.ttl, vm1.APIIdemTTL),
		}); err != nil {
			return n, fmt.Errorf("idempotency: warm: %w", err)
		}
		n++
	}
	return n, nil
}

// StatusCode maps Do's errors to HTTP: 422 for ErrConflict (the key was used for
// another request), 409 for ErrInProgress, 503 for ErrUnavailable, 400 for
// ErrInvalidRequest, 500 for the rest (ErrLeaseLost included: the call rolled
// back, and a retry runs it again).
func StatusCode(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrConflict):
		return http.StatusUnprocessableEntity
	case errors.Is(err, ErrInProgress):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrInvalidRequest):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
