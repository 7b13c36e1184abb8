package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/jackc/pgx/v5"
)

// DefaultRedisTimeout bounds each Redis call of DoLeased: the Redis lock is an
// accelerator, and a slow Redis must not hold up work PostgreSQL can decide.
const DefaultRedisTimeout = 250 * time.Millisecond

// LeasedOptions tune DoLeased. The zero value is a 30 s lease extended every 10 s
// and Redis calls bounded by DefaultRedisTimeout.
type LeasedOptions struct {
	// TTL is the lease of both the Redis lock and the row lease, 1ms..MaxTTL; zero
	// means MaxTTL.
	TTL time.Duration
	// ExtendEvery is how often both are extended; zero means TTL/3. It must be
	// shorter than TTL.
	ExtendEvery time.Duration
	// RedisTimeout bounds each Redis call; zero means DefaultRedisTimeout.
	RedisTimeout time.Duration
}

func (o LeasedOptions) withDefaults() (LeasedOptions, error) {
	lo, err := Options{TTL: o.TTL, ExtendEvery: o.ExtendEvery}.withDefaults()
	if err != nil {
		return o, err
	}
	o.TTL, o.ExtendEvery = lo.TTL, lo.ExtendEvery
	if o.RedisTimeout < 0 {
		return o, fmt.Errorf("coord: LeasedOptions.RedisTimeout %s: want zero or positive", o.RedisTimeout)
	}
	if o.RedisTimeout == 0 {
		o.RedisTimeout = DefaultRedisTimeout
	}
	return o, nil
}

// Guard is what work run by DoLeased holds: the row lease, whose fencing token
// goes with every side effect.
type Guard struct {
	lease *RowLease
	redis bool
}

// Fence is the row lease's fencing token: larger than that of every earlier
// holding of the same name.
func (g *Guard) Fence() int64 { return g.lease.fence }

// Verify is the fencing check of a write in the caller's transaction tx (see
// RowLease.Verify): it fails with ErrLeaseLost once the row lease ran out or
// was taken over, and otherwise keeps it from being taken over until tx ends.
func (g *Guard) Verify(ctx context.Context, tx pgx.Tx) error { return g.lease.Verify(ctx, tx) }

// RedisLocked reports whether the Redis lock was taken too; it is false when
// Redis could not answer and the work runs under the row lease alone.
func (g *Guard) RedisLocked() bool { return g.redis }

// DoLeased runs fn under the lock name and its PostgreSQL row lease (seed 000
// §6): the Redis lock answers "someone else has it" without touching
// PostgreSQL, and the row lease decides. In order:
//
//  1. The Redis lock is tried once (within RedisTimeout). Held by another owner:
//     DoLeased fails with a *NotObtainedError (ErrNotObtained). Redis unavailable
//     (degraded.Unavailable): the work goes on without it.
//  2. The row lease is claimed for the same owner. Held by another owner (the
//     Redis lock was lost, by a restart without persistence or an eviction, or
//     Redis is down): DoLeased releases its Redis lock and fails with an error
//     matching ErrNotObtained and ErrLeaseHeld.
//  3. fn runs; both are extended every ExtendEvery. Losing the row lease (or
//     failing to extend it before it ends) cancels fn's context, with cause
//     ErrLeaseLost; losing the Redis lock does not, since the row lease still
//     protects the work.
//  4. Both are released.
//
// fn must check Guard.Verify in the transaction of each side effect. DoLeased
// returns the error of steps 1-2, or fn's error joined with the loss of the row
// lease, else with the error of its release.
func (l *Locker) DoLeased(ctx context.Context, name Name, leases *LeaseStore, o LeasedOptions, fn func(ctx context.Context, g *Guard) error) (err error) {
	if leases == nil {
		return errors.New("coord: DoLeased: nil LeaseStore")
	}
	if name.lock == nil || name.fence == nil {
		return errors.New("coord: empty Name (build it with SafetyRecovery, Delivery or SettingsRefresh)")
	}
	o, err = o.withDefaults()
	if err != nil {
		return err
	}
	owner, err := newOwner()
	if err != nil {
		return err
	}

	redisLocked := false
	rctx, cancel := context.WithTimeout(ctx, o.RedisTimeout)
	r, rerr := l.scripts.LockAcquire(rctx, name.lock, name.fence, vm1.LockAcquireArgs{Owner: owner, LockTTL: o.TTL})
	cancel()
	switch {
	case rerr == nil && !r.Acquired:
		return &NotObtainedError{Name: name.kind, HolderTTL: r.TTL}
	case rerr == nil:
		redisLocked = true
	case ctx.Err() != nil:
		return fmt.Errorf("coord: lock %s: %w", name, ctx.Err())
	case !degraded.Unavailable(rerr):
		return fmt.Errorf("coord: lock %s: %w", name, rerr)
	}
	releaseRedis := func() {
		if !redisLocked {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.RedisTimeout)
		defer cancel()
		_, _ = l.scripts.LockRelease(rctx, name.lock, vm1.LockReleaseArgs{Owner: owner})
	}

	sent := time.Now()
	lease, err := leases.Acquire(ctx, name, owner, o.TTL)
	if err != nil {
		releaseRedis()
		if errors.Is(err, ErrLeaseHeld) {
			return fmt.Errorf("coord: lock %s: %w: %w", name, ErrNotObtained, err)
		}
		return err
	}
	deadline := sent.Add(o.TTL)
	guard := &Guard{lease: lease, redis: redisLocked}

	return runHeld(ctx, func(work context.Context, stop <-chan struct{}) error {
		return l.keepLeased(work, name, owner, lease, o, deadline, &redisLocked, stop)
	}, func(rctx context.Context) error {
		err := lease.Release(rctx)
		releaseRedis() // reads redisLocked: keepLeased has returned
		return err
	}, func(work context.Context) error {
		return fn(work, guard)
	})
}

// keepLeased extends the row lease and the Redis lock every ExtendEvery until
// stop is closed or ctx ends, and returns the loss of the row lease (nil when
// stopped first). redisLocked is cleared once the Redis lock is lost; it is read
// again only after this goroutine ended.
func (l *Locker) keepLeased(ctx context.Context, name Name, owner string, lease *RowLease, o LeasedOptions, deadline time.Time, redisLocked *bool, stop <-chan struct{}) error {
	expired := func() error {
		return fmt.Errorf("coord: lock %s: the row lease ran out before an extension succeeded: %w", name, ErrLeaseLost)
	}
	return keepExtending(ctx, o.ExtendEvery, deadline, stop, expired, func(ectx context.Context) (time.Time, error) {
		sent := time.Now()
		err := lease.Extend(ectx)
		if errors.Is(err, ErrLeaseLost) {
			return time.Time{}, fmt.Errorf("coord: lock %s: %w", name, err)
		}
		if *redisLocked {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.RedisTimeout)
			out, rerr := l.scripts.LockExtend(rctx, name.lock, vm1.LockExtendArgs{Owner: owner, LockTTL: o.TTL})
			cancel()
			if rerr == nil && out != vm1.LockOutcomeOk {
				*redisLocked = false // lost (restart, eviction): the row lease still holds
			}
		}
		if err != nil {
			return time.Time{}, nil // a network error, a timeout: the next tick tries again
		}
		return sent.Add(o.TTL), nil
	})
}
