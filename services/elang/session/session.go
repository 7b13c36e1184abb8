// Package session is Elang's distributed session store (Elang Redis doc, seed
// 003: "a distributed session read takes the session's own lock; session data
// expires after two hours; the lock lasts 30 seconds; stale writers must not
// overwrite a newer session; authentication revocation is still checked in
// SQL").
//
// Open takes the session's lock (30 s) and reads it; Save writes it only when
// the stored version is still the one Open read (the version check is in the
// script, elang_session_save), so a writer that stalled while another request
// saved is refused with ErrStale instead of overwriting the newer session;
// Release drops the lock: call it before a long response (SSE) or an external
// call, so the user's other requests are not held up. Every Open asks the
// caller's Revocations (the SQL check) whether the session's subject was
// revoked, and ends a revoked session.
//
// Sessions live only in Redis, under the deployment prefix: changing the
// prefix ends every session. A session id is a bearer token, so no key name
// holds it: the keys carry its HMAC (the deployment's secret, New's keyHMAC),
// since key names are no secret (SCAN, MONITOR, slow logs and dumps show them). A Redis failure is reported (ErrUnavailable,
// elang_session_failures_total), never answered from state of this process.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/promreg"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/keypart"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Errors of the session store; each is matched with errors.Is.
var (
	// ErrInvalid: an id, subject, body or option refused before any I/O.
	ErrInvalid = errors.New("session: invalid argument")
	// ErrNotFound: no such session (never created, expired, ended, or of another prefix).
	ErrNotFound = errors.New("session: not found")
	// ErrLocked: another request holds the session's lock (Open waited Options.LockWait).
	ErrLocked = errors.New("session: locked by another request")
	// ErrStale: the session changed since this writer read it; nothing was written.
	ErrStale = errors.New("session: stale write refused")
	// ErrRevoked: the caller's Revocations says the subject was revoked; the session ended.
	ErrRevoked = errors.New("session: authentication revoked")
	// ErrRevocationUnknown: the revocation check failed; the session is not served.
	ErrRevocationUnknown = errors.New("session: revocation check failed")
	// ErrUnavailable: Redis could not answer; the session's state is unknown.
	ErrUnavailable = errors.New("session: redis unavailable")
)

// Revocations is the caller's SQL check of authentication revocation.
type Revocations interface {
	// Revoked reports whether the authentication of subject was revoked.
	Revoked(ctx context.Context, subject string) (bool, error)
}

// MaxBodyBytes bounds a session's body.
const MaxBodyBytes = 65536

// MaxSubjectBytes bounds a session's subject.
const MaxSubjectBytes = 256

// DataTTL is how long a session lives after its last save (2 h).
const DataTTL = elang.ElangSessionDataTTL

// LockTTL is the lease of a session's lock (30 s).
const LockTTL = elang.ElangSessionLockTTL

// Options tune the session store. The zero value is usable.
type Options struct {
	// LockWait is how long Open waits for another request's lock; zero means
	// no wait (ErrLocked at once), at most LockTTL.
	LockWait time.Duration
	// Timeout bounds each Redis call; zero means 2s. It bounds a call to a hung
	// server only when the client has ContextTimeoutEnabled.
	Timeout time.Duration
	// Registerer receives the metrics; nil: counted but exported nowhere.
	Registerer prometheus.Registerer
	// Logger receives a warning per Redis failure (never a session id or body);
	// nil means slog.Default().
	Logger *slog.Logger
}

// Sessions is the session store of one deployment prefix. It is safe for
// concurrent use.
type Sessions struct {
	s        *elang.Scripts
	p        elang.Prefix
	hmac     secrets.HMACKey
	rev      Revocations
	wait     time.Duration
	timeout  time.Duration
	log      *slog.Logger
	ops      *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// New returns the session store in the Redis rdb reaches (database 0), under
// prefix p, checking revocation with rev; keyHMAC hashes session ids into key
// names (build it with secrets.NewHMACKey from a secret of the deployment's
// config; changing it ends every session). It fails only on a missing
// dependency or an option out of range.
func New(rdb redis.Scripter, p elang.Prefix, keyHMAC secrets.HMACKey, rev Revocations, o Options) (*Sessions, error) {
	switch {
	case rdb == nil:
		return nil, fmt.Errorf("session: %w: no redis client (sessions have no local fallback)", ErrInvalid)
	case keyHMAC.IsZero():
		return nil, fmt.Errorf("session: %w: the zero HMAC key (build it with secrets.NewHMACKey): session ids reach key names only hashed", ErrInvalid)
	case rev == nil:
		return nil, fmt.Errorf("session: %w: no Revocations (revocation is checked in SQL on every Open)", ErrInvalid)
	case o.LockWait < 0 || o.LockWait > LockTTL:
		return nil, fmt.Errorf("session: %w: LockWait %s: want 0..%s", ErrInvalid, o.LockWait, LockTTL)
	case o.Timeout < 0:
		return nil, fmt.Errorf("session: %w: Timeout %s: want zero or positive", ErrInvalid, o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	s, err := elang.NewScripts(elang.Clients{DB0: rdb}, elang.WithPrefix(p))
	if err != nil {
		return nil, fmt.Errorf("session: %w: %w", ErrInvalid, err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	set := promreg.On(o.Registerer)
	x := &Sessions{
		s: s, p: p, hmac: keyHMAC, rev: rev, wait: o.LockWait, timeout: o.Timeout, log: o.Logger,
		ops:      set.CounterVec("elang_session_operations_total", "Session operations by op (create, open, save, release, destroy) and result.", "op", "result"),
		failures: set.CounterVec("elang_session_failures_total", "Session operations Redis could not serve, by op: the caller got ErrUnavailable. Alert on any increase.", "op"),
	}
	if err := set.Err(); err != nil {
		return nil, fmt.Errorf("session: metrics: %w", err)
	}
	return x, nil
}

// Session is one request's hold on a session: what Open read, and the
// session's lock while it is held. Use it from one goroutine.
type Session struct {
	x       *Sessions
	ID      string // 64 hex characters: the bearer token, in no key name (the keys hold its HMAC)
	Subject string // whose authentication Revocations checks
	Version int64  // the stored version this hold read or wrote last
	Body    []byte
	owner   string
	data    elang.ElangSessionDataKey
	lock    elang.ElangSessionLockKey
}

func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keys are the session's data and lock keys: they carry the HMAC of id, never id.
func (x *Sessions) keys(id string) (elang.ElangSessionDataKey, elang.ElangSessionLockKey, error) {
	if !keypart.Hex(id, 64) {
		return elang.ElangSessionDataKey{}, elang.ElangSessionLockKey{}, fmt.Errorf("session: %w: id: want 64 lower-case hex characters", ErrInvalid)
	}
	h := x.hmac.Sum(id)
	d, err := elang.NewElangSessionDataKey(x.p, h)
	if err != nil {
		return d, elang.ElangSessionLockKey{}, fmt.Errorf("session: %w: id: want 64 lower-case hex characters", ErrInvalid)
	}
	l, err := elang.NewElangSessionLockKey(x.p, h)
	if err != nil {
		return d, l, fmt.Errorf("session: %w: id: want 64 lower-case hex characters", ErrInvalid)
	}
	return d, l, nil
}

// Create starts a new session of subject with body, held by the caller (call
// Release when done).
func (x *Sessions) Create(ctx context.Context, subject string, body []byte) (*Session, error) {
	if subject == "" || len(subject) > MaxSubjectBytes {
		return nil, fmt.Errorf("session: %w: subject of %d bytes: want 1..%d", ErrInvalid, len(subject), MaxSubjectBytes)
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	d, l, err := x.keys(id)
	if err != nil {
		return nil, err
	}
	h := &Session{x: x, ID: id, Subject: subject, owner: token(), data: d, lock: l}
	r, err := x.open(ctx, d, l, h.owner)
	if err != nil {
		return nil, x.fail("create", err)
	}
	if !r.Acquired || r.Found {
		x.count("create", "collision")
		return nil, fmt.Errorf("session: a new random id is taken: %w", ErrLocked)
	}
	if err := h.Save(ctx, body); err != nil {
		_, _ = x.release(ctx, l, h.owner)
		return nil, err
	}
	x.count("create", "ok")
	return h, nil
}

// Open takes the session's lock (waiting up to Options.LockWait while another
// request holds it: ErrLocked after that) and reads the session: ErrNotFound
// when there is none. It then asks Revocations about the subject: a revoked
// subject's session is ended (ErrRevoked); a failed check serves nothing
// (ErrRevocationUnknown). In both cases and on ErrNotFound the lock is dropped.
func (x *Sessions) Open(ctx context.Context, id string) (*Session, error) {
	d, l, err := x.keys(id)
	if err != nil {
		return nil, err
	}
	h := &Session{x: x, ID: id, owner: token(), data: d, lock: l}
	deadline := time.Now().Add(x.wait)
	for {
		r, err := x.open(ctx, d, l, h.owner)
		if err != nil {
			return nil, x.fail("open", err)
		}
		if r.Acquired {
			if !r.Found {
				_, _ = x.release(ctx, l, h.owner)
				x.count("open", "not_found")
				return nil, ErrNotFound
			}
			h.Subject, h.Version, h.Body = r.Subject, r.Version, r.Body
			break
		}
		left := time.Until(deadline)
		if left <= 0 {
			x.count("open", "locked")
			return nil, ErrLocked
		}
		pause := min(left, r.LockTTL+time.Millisecond, 25*time.Millisecond)
		select {
		case <-ctx.Done():
			x.count("open", "locked")
			return nil, fmt.Errorf("%w: %w", ErrLocked, ctx.Err())
		case <-time.After(pause):
		}
	}
	revoked, err := x.rev.Revoked(ctx, h.Subject)
	switch {
	case err != nil:
		_ = h.Release(ctx)
		x.count("open", "revocation_unknown")
		return nil, fmt.Errorf("%w: %w", ErrRevocationUnknown, err)
	case revoked:
		if _, err := x.destroy(ctx, d, l); err != nil {
			return nil, x.fail("open", err)
		}
		x.count("open", "revoked")
		return nil, ErrRevoked
	}
	x.count("open", "ok")
	return h, nil
}

// Save writes body as the session's new content, for 2 h from now, when the
// stored version is still the one this hold read: ErrStale when another
// writer saved (or the session ended) since, ErrLocked when another request
// holds the lock now. The lock stays held.
func (h *Session) Save(ctx context.Context, body []byte) error {
	if len(body) > MaxBodyBytes {
		return fmt.Errorf("session: %w: body of %d bytes: at most %d", ErrInvalid, len(body), MaxBodyBytes)
	}
	if body == nil {
		body = []byte{}
	}
	v, err := h.x.save(ctx, h.data, h.lock, elang.ElangSessionSaveArgs{
		Owner: h.owner, Version: h.Version, Subject: h.Subject, Body: body,
	})
	switch {
	case errors.Is(err, elang.ErrStale):
		h.x.count("save", "stale")
		return ErrStale
	case errors.Is(err, elang.ErrLocked):
		h.x.count("save", "locked")
		return ErrLocked
	case err != nil:
		return h.x.fail("save", err)
	}
	h.Version, h.Body = v, body
	h.x.count("save", "ok")
	return nil
}

// Release drops the session's lock if this hold still has it (a lock that ran
// out or another request took is left alone, and is no error). Call it before
// long responses and external calls.
func (h *Session) Release(ctx context.Context) error {
	out, err := h.x.release(ctx, h.lock, h.owner)
	if err != nil {
		return h.x.fail("release", err)
	}
	h.x.count("release", string(out))
	return nil
}

// Destroy ends the session id (logout): its data and its lock.
func (x *Sessions) Destroy(ctx context.Context, id string) error {
	d, l, err := x.keys(id)
	if err != nil {
		return err
	}
	if _, err := x.destroy(ctx, d, l); err != nil {
		return x.fail("destroy", err)
	}
	x.count("destroy", "ok")
	return nil
}

// The script calls, each bounded by Options.Timeout.

func (x *Sessions) open(ctx context.Context, d elang.ElangSessionDataKey, l elang.ElangSessionLockKey, owner string) (elang.ElangSessionOpenResult, error) {
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	return x.s.ElangSessionOpen(ctx, d, l, elang.ElangSessionOpenArgs{Owner: owner})
}

func (x *Sessions) save(ctx context.Context, d elang.ElangSessionDataKey, l elang.ElangSessionLockKey, a elang.ElangSessionSaveArgs) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	return x.s.ElangSessionSave(ctx, d, l, a)
}

func (x *Sessions) release(ctx context.Context, l elang.ElangSessionLockKey, owner string) (elang.LockOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	return x.s.ElangLockRelease(ctx, l, elang.ElangLockReleaseArgs{Owner: owner})
}

func (x *Sessions) destroy(ctx context.Context, d elang.ElangSessionDataKey, l elang.ElangSessionLockKey) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	return x.s.ElangSessionDestroy(ctx, d, l)
}

func (x *Sessions) count(op, result string) { x.ops.WithLabelValues(op, result).Inc() }

// fail is a Redis error as the caller's: a refused argument as ErrInvalid,
// anything else ErrUnavailable, counted and logged.
func (x *Sessions) fail(op string, err error) error {
	if errors.Is(err, runtime.ErrInvalidArg) || errors.Is(err, runtime.ErrInvalidKeyPart) {
		x.count(op, "invalid")
		return fmt.Errorf("session %s: %w: %w", op, ErrInvalid, err)
	}
	x.count(op, "failure")
	x.failures.WithLabelValues(op).Inc()
	x.log.Warn("elang session: redis failure", "op", op, "prefix", x.p.String(), "err", err)
	return fmt.Errorf("session %s: %w: %w", op, ErrUnavailable, err)
}
