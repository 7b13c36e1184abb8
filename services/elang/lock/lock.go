// Package lock is Elang's named lock (Elang Redis doc, seed 003:
// "$runtime->lock('report:42', 30)"): Acquire, Refresh before the lease ends,
// Release, and only the owner refreshes or releases.
//
// Any name works ("report:42"): the key holds only its SHA-256 under the
// deployment prefix (keyspec.yaml elang_lock), so no name can reach another
// key, and two deployment prefixes never share a lock.
//
// A lock lives in services/elang/store: Redis, or, when the application has
// no REDIS_URL, a private local directory, which excludes the processes of one
// host only and coordinates nothing across hosts. Failures of the store are
// reported (ErrUnavailable, elang_lock_failures_total), never answered from
// state of this process: a caller that cannot reach the store does not hold
// the lock.
package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/services/elang/store"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrInvalid: a name or a TTL the lock cannot take, refused before any I/O.
var ErrInvalid = store.ErrInvalid

// ErrUnavailable: the store could not answer; the lock state is unknown.
var ErrUnavailable = errors.New("lock: store unavailable")

// ErrNotHeld: a Refresh or Release by a caller that no longer holds the lock
// (its lease ran out, another owner may hold it now).
var ErrNotHeld = errors.New("lock: not held by this owner")

// NotHeldError is ErrNotHeld with what the store found.
type NotHeldError struct {
	Op      string            // "refresh" or "release"
	Outcome elang.LockOutcome // expired (no lock) or other_owner (another holds it)
}

func (e *NotHeldError) Error() string {
	return fmt.Sprintf("lock %s: not held by this owner (%s)", e.Op, e.Outcome)
}

// Is matches ErrNotHeld.
func (e *NotHeldError) Is(target error) bool { return target == ErrNotHeld }

// Options tune a Locker. The zero value is usable.
type Options struct {
	// Timeout bounds each store call; zero means 2s.
	Timeout time.Duration
	// Registerer receives the metrics; nil: counted but exported nowhere.
	Registerer prometheus.Registerer
	// Logger receives a warning per store failure; nil means slog.Default().
	Logger *slog.Logger
}

// Locker makes the locks of one deployment prefix. It is safe for concurrent use.
type Locker struct {
	st      *store.Store
	timeout time.Duration
	m       *store.Meter
}

// New returns the Locker on st.
func New(st *store.Store, o Options) *Locker {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Locker{st: st, timeout: o.Timeout, m: store.NewMeter(st, "lock", o.Registerer, o.Logger,
		"Lock operations by op (acquire, refresh, release) and result (acquired, busy, ok, expired, other_owner, failure, invalid).",
		"Lock store failures by op: the caller got ErrUnavailable. Alert on any increase.")}
}

// Local reports whether the locks live in the local directory (one host only).
func (l *Locker) Local() bool { return l.st.Local() }

// Lock is the lock name with a lease of ttl (1ms..10m), for a new owner: each
// Lock has an owner token of its own, so two Locks of one name exclude each
// other. Nothing is called until Acquire.
func (l *Locker) Lock(name string, ttl time.Duration) *Lock {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return &Lock{l: l, name: name, ttl: ttl, owner: hex.EncodeToString(b[:])}
}

// Lock is one owner's hold on a named lock. Use it from one goroutine.
type Lock struct {
	l     *Locker
	name  string
	ttl   time.Duration
	owner string
}

// TTL is the lease each Acquire and Refresh gives.
func (k *Lock) TTL() time.Duration { return k.ttl }

// Acquire takes the lock for a lease of TTL from now: true when this owner
// holds it (also when it held it already: the lease starts again), false when
// another owner does. A store failure is ErrUnavailable, never false or true.
func (k *Lock) Acquire(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, k.l.timeout)
	defer cancel()
	ok, _, err := k.l.st.Acquire(ctx, k.name, k.owner, k.ttl)
	if err := k.l.fail("acquire", err); err != nil {
		return false, err
	}
	if ok {
		k.l.m.Count("acquire", "acquired")
	} else {
		k.l.m.Count("acquire", "busy")
	}
	return ok, nil
}

// Refresh restarts the lease of a held lock at TTL from now; call it before
// the lease ends. A lock this owner no longer holds is a *NotHeldError
// (ErrNotHeld): the work it guarded must stop.
func (k *Lock) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, k.l.timeout)
	defer cancel()
	out, err := k.l.st.Refresh(ctx, k.name, k.owner, k.ttl)
	return k.outcome("refresh", out, err)
}

// Release drops the lock, only if this owner holds it; otherwise a
// *NotHeldError (ErrNotHeld), and another owner's lock stays untouched.
func (k *Lock) Release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, k.l.timeout)
	defer cancel()
	out, err := k.l.st.Release(ctx, k.name, k.owner)
	return k.outcome("release", out, err)
}

func (k *Lock) outcome(op string, out elang.LockOutcome, err error) error {
	if err := k.l.fail(op, err); err != nil {
		return err
	}
	k.l.m.Count(op, string(out))
	if out != elang.LockOutcomeOk {
		return &NotHeldError{Op: op, Outcome: out}
	}
	return nil
}

// fail turns a store error into the caller's: ErrInvalid as it is, anything
// else ErrUnavailable, counted and logged (the lock's name is not logged).
func (l *Locker) fail(op string, err error) error { return l.m.Err(op, err, ErrUnavailable) }
