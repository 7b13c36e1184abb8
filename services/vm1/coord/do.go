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
	return runHeld(ctx, func(work context.Context, stop <-chan struct{}) error {
		return lk.keepAlive(work, o.ExtendEvery, stop)
	}, lk.Release, func(work context.Context) error {
		return fn(work, lk)
	})
}

// runHeld runs fn while keep holds what fn needs (a lock, a lease): keep runs
// on a goroutine of its own until stop closes, and returns the loss of the
// hold, which cancels fn's context with it as the cause. When fn returns, or
// panics, keep is stopped and release runs with a context of its own
// (releaseTimeout; the caller's may have ended). The error is fn's joined with
// the loss when the hold was lost (the release's outcome adds nothing to it),
// else with the release's error.
func runHeld(ctx context.Context, keep func(ctx context.Context, stop <-chan struct{}) error, release func(ctx context.Context) error, fn func(ctx context.Context) error) (err error) {
	work, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var lost error
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if lost = keep(work, stop); lost != nil {
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
		relErr := release(rctx)
		if lost != nil {
			err = errors.Join(fnErr, lost)
			return
		}
		err = errors.Join(fnErr, relErr)
	}()
	fnErr = fn(work)
	return nil // replaced by the deferred release's outcome
}

// keepAlive extends the lease every `every` until stop is closed or ctx (the
// work's context) ends, and returns the loss of the lease (nil when stopped or
// ended first).
func (lk *Lock) keepAlive(ctx context.Context, every time.Duration, stop <-chan struct{}) error {
	expired := func() error {
		return fmt.Errorf("coord: lock %s: the lease ran out before an extension succeeded: %w", lk.name, ErrExpired)
	}
	return keepExtending(ctx, every, lk.Deadline(), stop, expired, func(ectx context.Context) (time.Time, error) {
		switch err := lk.Extend(ectx); {
		case err == nil:
			return lk.Deadline(), nil
		case errors.Is(err, ErrExpired), errors.Is(err, ErrHeldByOther):
			return time.Time{}, err
		}
		return time.Time{}, nil
	})
}

// keepExtending calls extend every `every` until stop is closed or ctx ends
// (it returns nil then), the deadline passes before an extension succeeded (it
// returns expired()), or extend reports the hold lost (it returns that). extend
// gets a context that ends at the current deadline (an extension answered after
// it is worthless) and returns the new deadline when it extended; neither a
// deadline nor a loss (a network error, a timeout) is tried again at the next
// tick, until the deadline.
func keepExtending(ctx context.Context, every time.Duration, deadline time.Time, stop <-chan struct{}, expired func() error, extend func(ctx context.Context) (time.Time, error)) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	expiry := time.NewTimer(time.Until(deadline))
	defer expiry.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return nil
		case <-expiry.C:
			return expired()
		case <-tick.C:
			ectx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
			next, lost := extend(ectx)
			cancel()
			if lost != nil {
				return lost
			}
			if !next.IsZero() {
				deadline = next
				expiry.Reset(time.Until(deadline))
			}
		}
	}
}
