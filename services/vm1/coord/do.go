package coord

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// releaseTimeout bounds the release at the end of Do, which runs even when the
// caller's context is already cancelled.
const releaseTimeout = 5 * time.Second

// Do obtains the lock (see Obtain), runs fn, and releases the lock when fn
// returns. While fn runs the lease is extended every Options.ExtendEvery.
//
// fn's context is cancelled as soon as the lease is lost, and context.Cause then
// matches ErrHeldByOther (an extension found another owner's lock), or ErrExpired
// (an extension found no lock, or the lease's deadline passed before any
// extension succeeded, e.g. while Redis was unreachable). fn must stop its side
// effects when its context ends, and should pass Lock.Fence to them.
//
// Do returns the error of Obtain, or fn's error joined with the loss of the lease
// when it was lost, else with the error of the release.
//
// When fn panics, Do stops extending the lease and releases the lock before the
// panic goes on up (to a recover in net/http, for instance): a panicking holder
// never keeps the lock.
func (l *Locker) Do(ctx context.Context, name Name, o Options, fn func(ctx context.Context, lk *Lock) error) (err error) {
	o, err = validate(name, o)
	if err != nil {
		return err
	}
	lk, err := l.obtain(ctx, name, o)
	if err != nil {
		return err
	}
	work, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var lost error
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		lost = lk.keepAlive(work, o.ExtendEvery, stop)
		if lost != nil {
			cancel(lost)
		}
	}()
	var fnErr error
	// Deferred, so that it runs when fn panics too.
	defer func() {
		close(stop)
		<-stopped
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer rcancel()
		relErr := lk.Release(rctx)
		if lost != nil {
			// The release may still free a lock whose extension could not be
			// confirmed; its outcome adds nothing to the loss.
			err = errors.Join(fnErr, lost)
			return
		}
		err = errors.Join(fnErr, relErr)
	}()
	fnErr = fn(work, lk)
	return nil // replaced by the deferred release's outcome
}

// keepAlive extends the lease every `every` until stop is closed or ctx (the
// work's context) ends, and returns the loss of the lease (nil when stopped or
// ended first).
func (lk *Lock) keepAlive(ctx context.Context, every time.Duration, stop <-chan struct{}) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	expiry := time.NewTimer(time.Until(lk.Deadline()))
	defer expiry.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return nil
		case <-expiry.C:
			return fmt.Errorf("coord: lock %s: the lease ran out before an extension succeeded: %w", lk.name, ErrExpired)
		case <-tick.C:
			// An extension answered after the deadline is worthless: wait no longer.
			ectx, cancel := context.WithDeadline(context.WithoutCancel(ctx), lk.Deadline())
			err := lk.Extend(ectx)
			cancel()
			switch {
			case err == nil:
				expiry.Reset(time.Until(lk.Deadline()))
			case errors.Is(err, ErrExpired), errors.Is(err, ErrHeldByOther):
				return err
			}
			// Anything else (network, timeout) is retried at the next tick,
			// until the deadline.
		}
	}
}
