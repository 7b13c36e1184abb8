// Package coord is HAN Chat's coordination lock in VM1 DB1 (seed 000 §6): the
// safety-recovery, delivery and settings-refresh locks, each a random owner token
// under SET NX PX with a 30 s lease, extended and released only by its owner
// (compare-and-expire, compare-and-delete in Lua).
//
// Every acquisition also gets a fencing token that never goes down for its lock
// name, so an external side effect (a PostgreSQL row, an outbound call) can reject
// a holder whose lease ran out while it was paused. The Redis lock is an
// optimisation: workers still rely on PostgreSQL row leases (FOR UPDATE SKIP
// LOCKED), unique constraints and idempotency as the final protection.
//
// Locker.DoLeased pairs the lock with that PostgreSQL row lease (LeaseStore,
// table coord_leases from LeaseMigration): the Redis lock turns contenders away
// without a query, the row lease (claimed with FOR UPDATE SKIP LOCKED, with an
// expiry and a fencing token checked in the transaction of each write) decides,
// so a lock Redis lost (a restart without persistence, an eviction) or a Redis
// outage never lets two workers do the same work.
//
// Locker.Do runs work under a lock: it extends the lease while the work runs and
// cancels the work's context as soon as the lease is lost. Errors tell apart a lock
// that was not obtained (ErrNotObtained), a lease that ran out (ErrExpired) and a
// lock another owner holds now (ErrHeldByOther).
package coord

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotObtained: another owner held the lock when it was requested.
	ErrNotObtained = errors.New("coord: lock not obtained: another owner holds it")
	// ErrExpired: the lease ran out; no one holds the lock now, or the lease could not
	// be renewed before its end.
	ErrExpired = errors.New("coord: lease expired")
	// ErrHeldByOther: the lease ran out and another owner holds the lock now.
	ErrHeldByOther = errors.New("coord: lock held by another owner")
)

// MaxTTL is the longest lease: the lock keys' TTL in the spec (30 s).
const MaxTTL = vm1.CoordLockDeliveryTTL

// lockKey is a key every lock script takes.
type lockKey interface {
	vm1.LockAcquireLock
	vm1.LockExtendLock
	vm1.LockReleaseLock
}

// Name is one lock: its key and the key of its fencing counter. Build it with
// SafetyRecovery, Delivery or SettingsRefresh.
type Name struct {
	kind  string
	lock  lockKey
	fence vm1.LockAcquireFence
}

// String is the lock's kind, e.g. "delivery"; it names the lock in errors
// without its identifier.
func (n Name) String() string { return n.kind }

// Key is the lock's Redis key.
func (n Name) Key() string {
	if n.lock == nil {
		return ""
	}
	return n.lock.String()
}

// newName builds the Name of kind from the lock and fence keys of id.
func newName[L lockKey, F vm1.LockAcquireFence](kind, id string, lock func(string) (L, error), fence func(string) (F, error)) (Name, error) {
	l, err := lock(id)
	if err != nil {
		return Name{}, err
	}
	f, err := fence(id)
	if err != nil {
		return Name{}, err
	}
	return Name{kind: kind, lock: l, fence: f}, nil
}

// SafetyRecovery is the lock han:coord:lock:safety-recovery:{task_id} of the
// recovery caller in api-backend (not of Redis Safety on VM2).
func SafetyRecovery(taskID string) (Name, error) {
	return newName("safety-recovery", taskID, vm1.NewCoordLockSafetyRecoveryKey, vm1.NewCoordFenceSafetyRecoveryKey)
}

// Delivery is the lock han:coord:lock:delivery:{message_id}.
func Delivery(messageID string) (Name, error) {
	return newName("delivery", messageID, vm1.NewCoordLockDeliveryKey, vm1.NewCoordFenceDeliveryKey)
}

// SettingsRefresh is the lock han:coord:lock:settings-refresh:{instance}.
func SettingsRefresh(instance string) (Name, error) {
	return newName("settings-refresh", instance, vm1.NewCoordLockSettingsRefreshKey, vm1.NewCoordFenceSettingsRefreshKey)
}

// Options tune Obtain and Do. The zero value is a 30 s lease, one attempt, and
// (in Do) an extension every 10 s.
type Options struct {
	// TTL is the lease, 1ms..MaxTTL; zero means MaxTTL.
	TTL time.Duration
	// RetryInterval, when positive, makes Obtain try again at this interval (or
	// sooner, when the holder's lease ends sooner) until the context ends.
	// Zero means a single attempt.
	RetryInterval time.Duration
	// ExtendEvery is how often Do extends the lease; zero means TTL/3. It must be
	// shorter than TTL.
	ExtendEvery time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.TTL == 0 {
		o.TTL = MaxTTL
	}
	if o.TTL < time.Millisecond || o.TTL > MaxTTL {
		return o, fmt.Errorf("coord: Options.TTL %s: want 1ms..%s", o.TTL, MaxTTL)
	}
	if o.RetryInterval < 0 {
		return o, fmt.Errorf("coord: Options.RetryInterval %s: want zero or positive", o.RetryInterval)
	}
	if o.ExtendEvery == 0 {
		o.ExtendEvery = o.TTL / 3
	}
	if o.ExtendEvery <= 0 || o.ExtendEvery >= o.TTL {
		return o, fmt.Errorf("coord: Options.ExtendEvery %s: want more than zero and less than the TTL %s", o.ExtendEvery, o.TTL)
	}
	return o, nil
}

// NotObtainedError is the error of Obtain when another owner holds the lock. It
// matches ErrNotObtained; when retries ran until the context ended it also
// matches the context's error.
type NotObtainedError struct {
	Name      string        // the lock's kind
	HolderTTL time.Duration // what was left of the holder's lease at the last attempt
	Err       error         // the context's error that ended the retries, or nil
}

func (e *NotObtainedError) Error() string {
	msg := fmt.Sprintf("coord: lock %s not obtained: another owner holds it for %s more", e.Name, e.HolderTTL)
	if e.Err != nil {
		msg += " (stopped retrying: " + e.Err.Error() + ")"
	}
	return msg
}

// Is matches ErrNotObtained.
func (e *NotObtainedError) Is(target error) bool { return target == ErrNotObtained }

// Unwrap is the context's error, if retries ended with it.
func (e *NotObtainedError) Unwrap() error { return e.Err }

// Locker obtains locks through vm1's generated scripts (DB1). It is safe for
// concurrent use.
type Locker struct {
	scripts *vm1.Scripts
}

// New returns a Locker on scripts, which need a DB1 client (without one, every
// call fails with runtime.ErrNoClient).
func New(scripts *vm1.Scripts) *Locker {
	return &Locker{scripts: cmp.Or(scripts, &vm1.Scripts{})}
}

// Obtain takes the lock for a new random owner, or fails with a
// *NotObtainedError (ErrNotObtained) while another owner holds it.
func (l *Locker) Obtain(ctx context.Context, name Name, o Options) (*Lock, error) {
	o, err := validate(name, o)
	if err != nil {
		return nil, err
	}
	return l.obtain(ctx, name, o)
}

// validate checks name and o, and returns o with its defaults filled in.
func validate(name Name, o Options) (Options, error) {
	if name.lock == nil || name.fence == nil {
		return o, errors.New("coord: empty Name (build it with SafetyRecovery, Delivery or SettingsRefresh)")
	}
	return o.withDefaults()
}

// obtain is Obtain for a name and options that validate accepted and completed.
func (l *Locker) obtain(ctx context.Context, name Name, o Options) (*Lock, error) {
	owner, err := newOwner()
	if err != nil {
		return nil, err
	}
	var holderTTL time.Duration
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		r, err := l.scripts.LockAcquire(ctx, name.lock, name.fence, vm1.LockAcquireArgs{Owner: owner, LockTTL: o.TTL})
		if err != nil {
			if attempt > 0 && ctx.Err() != nil {
				// The context ended during a retry: the lock was not obtained,
				// as the earlier attempts found, and this is why retrying stopped.
				return nil, &NotObtainedError{Name: name.kind, HolderTTL: holderTTL, Err: ctx.Err()}
			}
			return nil, fmt.Errorf("coord: obtain lock %s: %w", name, err)
		}
		holderTTL = r.TTL
		if r.Acquired {
			return &Lock{l: l, name: name, owner: owner, ttl: o.TTL, fence: r.Fence, deadline: sent.Add(o.TTL)}, nil
		}
		if o.RetryInterval == 0 {
			return nil, &NotObtainedError{Name: name.kind, HolderTTL: r.TTL}
		}
		wait := o.RetryInterval
		if r.TTL > 0 && r.TTL < wait {
			wait = r.TTL + time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &NotObtainedError{Name: name.kind, HolderTTL: r.TTL, Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// newOwner is a random owner token: 128 bits, URL-safe base64.
func newOwner() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("coord: owner token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Lock is one holding of a lock. It is safe for concurrent use.
type Lock struct {
	l     *Locker
	name  Name
	owner string
	ttl   time.Duration
	fence int64

	mu       sync.Mutex
	deadline time.Time
}

// Name is the lock's name.
func (lk *Lock) Name() Name { return lk.name }

// Fence is this holding's fencing token: larger than the token of every earlier
// holding of the same lock name. Pass it to external side effects so they can
// refuse a stale holder.
func (lk *Lock) Fence() int64 { return lk.fence }

// TTL is the lease each Obtain and Extend grants.
func (lk *Lock) TTL() time.Duration { return lk.ttl }

// Deadline is when the lease ends at the latest, as this process can tell: the
// time the last successful acquire or extend was sent, plus the TTL.
func (lk *Lock) Deadline() time.Time {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.deadline
}

// Extend renews the lease for another TTL. It fails with ErrExpired when the
// lock is gone and with ErrHeldByOther when another owner holds it; neither
// touches the lock.
func (lk *Lock) Extend(ctx context.Context) error {
	sent := time.Now()
	out, err := lk.l.scripts.LockExtend(ctx, lk.name.lock, vm1.LockExtendArgs{Owner: lk.owner, LockTTL: lk.ttl})
	if err != nil {
		return fmt.Errorf("coord: extend lock %s: %w", lk.name, err)
	}
	if err := outcomeError("extend", lk.name, out); err != nil {
		return err
	}
	lk.mu.Lock()
	lk.deadline = sent.Add(lk.ttl)
	lk.mu.Unlock()
	return nil
}

// Release gives the lock up. It fails with ErrExpired when the lock is already
// gone and with ErrHeldByOther when another owner holds it, which it leaves alone.
func (lk *Lock) Release(ctx context.Context) error {
	out, err := lk.l.scripts.LockRelease(ctx, lk.name.lock, vm1.LockReleaseArgs{Owner: lk.owner})
	if err != nil {
		return fmt.Errorf("coord: release lock %s: %w", lk.name, err)
	}
	return outcomeError("release", lk.name, out)
}

func outcomeError(op string, name Name, out vm1.LockOutcome) error {
	switch out {
	case vm1.LockOutcomeOk:
		return nil
	case vm1.LockOutcomeExpired:
		return fmt.Errorf("coord: %s lock %s: %w", op, name, ErrExpired)
	case vm1.LockOutcomeOtherOwner:
		return fmt.Errorf("coord: %s lock %s: %w", op, name, ErrHeldByOther)
	}
	return fmt.Errorf("coord: %s lock %s: unknown outcome", op, name)
}
