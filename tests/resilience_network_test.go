package tests

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/redis/go-redis/v9"
)

// networkPolicy has one route of each degraded mode.
func networkPolicy() ratelimit.Policy {
	return ratelimit.Policy{
		vm1.APIRouteMessagesSend: {Algorithm: ratelimit.SlidingWindow, Degraded: degraded.FailClosed, Limits: []ratelimit.Limit{
			{Scope: ratelimit.ScopeUser, Limit: 100, Window: time.Minute},
		}},
		vm1.APIRouteProfileGet: {Algorithm: ratelimit.FixedWindow, Degraded: degraded.FailOpen, Limits: []ratelimit.Limit{
			{Scope: ratelimit.ScopeUser, Limit: 100, Window: time.Minute},
		}},
		vm1.APIRoutePublicGet: {Algorithm: ratelimit.FixedWindow, Degraded: degraded.LocalLimit, Limits: []ratelimit.Limit{
			{Scope: ratelimit.ScopeIP, Limit: 5, Window: time.Minute},
		}},
	}
}

// serviceVia is how api-backend configures its clients (go-redis honours the
// caller's deadline), pointed at the proxy.
func serviceVia(p *faultProxy) func(*redis.Options) {
	return func(o *redis.Options) {
		o.Addr = p.addr()
		o.ContextTimeoutEnabled = true
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, time.Second, time.Second
		o.PoolSize = 64
	}
}

// warmPool leaves n connections of c open, authenticated and idle, as in a
// service under steady load: a call then sends its command at once instead of
// first dialing and authenticating.
func warmPool(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	conns := make([]*redis.Conn, n)
	for i := range conns {
		conns[i] = c.Conn()
		if err := conns[i].Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, cn := range conns {
		if err := cn.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.PoolStats(); st.IdleConns < uint32(n) {
		t.Fatalf("the pool holds %d idle connections, want %d", st.IdleConns, n)
	}
}

// subscriberVia is the Subscriber's client, pointed at the proxy.
func subscriberVia(p *faultProxy) func(*redis.Options) {
	return func(o *redis.Options) {
		o.Addr = p.addr()
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, time.Second, time.Second
	}
}

// networkStack is the VM1 packages on a generated VM1 server reached through
// a fault proxy, with the scripts preloaded directly.
func networkStack(t *testing.T) (*aclInstance, *faultProxy, *vm1Stack) {
	t.Helper()
	a := startACLInstance(t, "vm1")
	p := startProxy(t, a.srv.Addr)
	s := newVM1Stack(t, a, serviceVia(p), networkPolicy())
	if err := runtime.Preload(context.Background(), a.userClient(t, "api_backend", vm1.DB0), vm1.AllScripts()...); err != nil {
		t.Fatal(err)
	}
	warmPool(t, s.db0, 32)
	return a, p, s
}

// callerBound is how long past its deadline a caller may wait: generous, so
// that only a call that ignores its deadline exceeds it.
const callerBound = time.Second

// withDeadline runs f with a context that ends after d and fails the test when
// f returns more than callerBound after that.
func withDeadline(t *testing.T, d time.Duration, what string, f func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	within(t, d+callerBound, what, func() { f(ctx) })
}

// Seed 000 §10 and §12 "latency": Redis answers, but later than the caller's
// deadline (700 ms added each way by the proxy, 150 ms deadline). Each call
// returns within its deadline plus a generous bound, and:
//   - the fail-closed route (messages.send) answers ErrUnavailable (503);
//   - the fail-open route (profile.get) allows, marked degraded;
//   - the local-limit route (public.get): 16 concurrent requests of one
//     address, exactly its limit (5) allowed, all degraded;
//   - a new idempotent call fails closed (503) and does not run;
//   - a completed one answers from PostgreSQL: the reservation gets only half of
//     the caller's time, the durable row the rest (seed 000 §10).
//
// The late commands still reach Redis: each fail-closed call is charged exactly
// once (go-redis does not send it again after the deadline), and a late
// reservation of the new idempotent call holds its key (409 for a retry, for
// at most the lock's 30 s), so it never runs twice. Once the latency is gone,
// calls succeed again.
func TestResilienceLatencyPastTheDeadline(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a, p, s := networkStack(t)
	admin0 := a.adminDB(vm1.DB0)
	sender := ratelimit.Subject{UserID: uuid.NewString()}
	if d, err := s.limiter.Allow(ctx, sender, vm1.APIRouteMessagesSend); err != nil || !d.Allowed || d.Degraded {
		t.Fatalf("through the proxy: %+v %v", d, err)
	}
	done := idemtest.Request(t, vm1.IdemScopeMessageSend, "before the latency")
	var doneCalls idemtest.Counter
	if _, err := s.keeper.Do(ctx, done, doneCalls.Call(done.Key, idemtest.Created(), nil)); err != nil {
		t.Fatal(err)
	}

	p.setLatency(700 * time.Millisecond)
	const deadline = 150 * time.Millisecond
	const sends = 4
	for i := 0; i < sends; i++ {
		withDeadline(t, deadline, "fail-closed route", func(ctx context.Context) {
			d, err := s.limiter.Allow(ctx, sender, vm1.APIRouteMessagesSend)
			if !errors.Is(err, ratelimit.ErrUnavailable) || ratelimit.StatusCode(d, err) != 503 {
				t.Errorf("fail-closed route past the deadline: %+v %v, want ErrUnavailable (503)", d, err)
			}
		})
	}
	withDeadline(t, deadline, "fail-open route", func(ctx context.Context) {
		if d, err := s.limiter.Allow(ctx, ratelimit.Subject{UserID: uuid.NewString()}, vm1.APIRouteProfileGet); err != nil || !d.Allowed || !d.Degraded {
			t.Errorf("fail-open route past the deadline: %+v %v, want allowed and degraded", d, err)
		}
	})
	var allowed, denied atomic.Int64
	var wg sync.WaitGroup
	visitor := ratelimit.Subject{IP: netip.MustParseAddr("203.0.113.50")}
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			withDeadline(t, deadline, "local-limit route", func(ctx context.Context) {
				d, err := s.limiter.Allow(ctx, visitor, vm1.APIRoutePublicGet)
				switch {
				case err != nil || !d.Degraded:
					t.Errorf("local-limit route past the deadline: %+v %v, want a degraded decision", d, err)
				case d.Allowed:
					allowed.Add(1)
				default:
					denied.Add(1)
				}
			})
		}()
	}
	wg.Wait()
	if allowed.Load() != 5 || denied.Load() != 11 {
		t.Errorf("local limiter: %d allowed, %d denied of 16; want 5 and 11", allowed.Load(), denied.Load())
	}
	fresh := idemtest.Request(t, vm1.IdemScopeMessageSend, "during the latency")
	var freshCalls idemtest.Counter
	withDeadline(t, deadline, "new idempotent call", func(ctx context.Context) {
		if _, err := s.keeper.Do(ctx, fresh, freshCalls.Call(fresh.Key, idemtest.Created(), nil)); !errors.Is(err, idempotency.ErrUnavailable) || idempotency.StatusCode(err) != 503 {
			t.Errorf("a new idempotent call past the deadline: %v, want ErrUnavailable (503)", err)
		}
	})
	withDeadline(t, deadline, "completed idempotent call", func(ctx context.Context) {
		out, err := s.keeper.Do(ctx, done, doneCalls.Call(done.Key, idemtest.Created(), nil))
		if err != nil || out.Source != idempotency.SourceDurable || !out.Replayed {
			t.Errorf("a completed idempotent call past the deadline: %+v %v, want its durable answer", out, err)
		}
	})

	p.setLatency(0)
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return p.inFlight.Load() == 0 }) {
		t.Fatal("the delayed traffic never arrived")
	}
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		d, err := s.limiter.Allow(ctx, ratelimit.Subject{UserID: uuid.NewString()}, vm1.APIRouteProfileGet)
		return err == nil && d.Allowed && !d.Degraded
	}) {
		t.Fatal("calls did not succeed again once the latency was gone")
	}
	// One charge before the latency, one per late call: none sent twice.
	if d, err := s.limiter.Peek(ctx, sender, vm1.APIRouteMessagesSend, 1); err != nil || d.Remaining != 100-1-sends-1 {
		t.Errorf("after the latency: %+v %v, want remaining %d (1 + %d late charges, then this peek's unit)", d, err, 100-1-sends-1, sends)
	}
	// The reservation Redis ran after the deadline is released in the background
	// by its owner; if the release overtook it, it holds the key: a retry is told
	// to wait (409) and does not run, until the lock's TTL ends it.
	lock, _ := vm1.NewAPIIdemLockKey(fresh.Scope, fresh.UserID, testHMACKey.Sum(fresh.Key))
	if ttl := admin0.PTTL(ctx, lock.String()).Val(); ttl > 0 {
		if ttl > vm1.APIIdemLockTTL {
			t.Errorf("the late reservation's lock has TTL %v, more than %v", ttl, vm1.APIIdemLockTTL)
		}
		if _, err := s.keeper.Do(ctx, fresh, freshCalls.Call(fresh.Key, idemtest.Created(), nil)); !errors.Is(err, idempotency.ErrInProgress) {
			t.Errorf("the retry after the latency: %v, want ErrInProgress while the late reservation holds the key", err)
		}
		if freshCalls.Runs.Load() != 0 {
			t.Errorf("the call ran %d times while its key was held", freshCalls.Runs.Load())
		}
	} else if out, err := s.keeper.Do(ctx, fresh, freshCalls.Call(fresh.Key, idemtest.Created(), nil)); err != nil || out.Replayed || freshCalls.Runs.Load() != 1 {
		t.Errorf("the retry after the latency, no reservation left: %+v %v, ran %d times; want one run", out, err, freshCalls.Runs.Load())
	}
	if out, err := s.keeper.Do(ctx, done, doneCalls.Call(done.Key, idemtest.Created(), nil)); err != nil || out.Source != idempotency.SourceRedis {
		t.Errorf("the completed call after the latency: %+v %v", out, err)
	}
	if doneCalls.Runs.Load() != 1 || s.sideEffects(t, done.Key) != 1 || s.sideEffects(t, fresh.Key) != int(freshCalls.Runs.Load()) {
		t.Errorf("runs %d and %d, side effects %d and %d", doneCalls.Runs.Load(), freshCalls.Runs.Load(), s.sideEffects(t, done.Key), s.sideEffects(t, fresh.Key))
	}
	scripttest.AuditTTLs(t, admin0, vm1.Keys)
}

// Seed 000 §10 and §12 "network partition": the proxy becomes a black hole
// (bytes vanish, nothing answers, connections stay open) and then heals.
// During the partition 40 concurrent calls (more than the pool's
// connections, so every connection is lost) fail closed within their deadline,
// a fail-open route degrades, and the realtime Subscriber notices the silence
// by its PING. After the heal, with no action of the application, go-redis
// makes new connections, calls succeed again, the idempotent call that failed runs once, and the
// Subscriber reconnects, reconciles the events published meanwhile and
// receives new ones.
func TestResiliencePartitionThenHeal(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a, p, s := networkStack(t)
	rig := startRTRig(t, a.userClientWith(t, "api_backend", vm1.DB1, subscriberVia(p)), a.userClient(t, "api_backend", vm1.DB1),
		pubsub.Options{PingEvery: 200 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	rig.waitFor(t, "subscribed", lastGapIs(pubsub.Subscribed))
	first := rig.publish(t, 1)
	rig.waitFor(t, "first event", wasDelivered(first))

	p.setBlackhole(true)
	const deadline = 300 * time.Millisecond
	// More concurrent callers than the pool holds connections: every pooled
	// connection carries a request into the black hole and is lost.
	var unavailable atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			withDeadline(t, deadline, "fail-closed route", func(ctx context.Context) {
				d, err := s.limiter.Allow(ctx, ratelimit.Subject{UserID: uuid.NewString()}, vm1.APIRouteMessagesSend)
				if !errors.Is(err, ratelimit.ErrUnavailable) {
					t.Errorf("fail-closed route in a partition: %+v %v, want ErrUnavailable", d, err)
					return
				}
				unavailable.Add(1)
			})
		}()
	}
	wg.Wait()
	if unavailable.Load() != 40 {
		t.Errorf("%d of 40 concurrent calls failed closed", unavailable.Load())
	}
	withDeadline(t, deadline, "fail-open route", func(ctx context.Context) {
		if d, err := s.limiter.Allow(ctx, ratelimit.Subject{UserID: uuid.NewString()}, vm1.APIRouteProfileGet); err != nil || !d.Allowed || !d.Degraded {
			t.Errorf("fail-open route in a partition: %+v %v", d, err)
		}
	})
	req := idemtest.Request(t, vm1.IdemScopeMessageSend, "during the partition")
	var calls idemtest.Counter
	withDeadline(t, deadline, "idempotent call", func(ctx context.Context) {
		if _, err := s.keeper.Do(ctx, req, calls.Call(req.Key, idemtest.Created(), nil)); !errors.Is(err, idempotency.ErrUnavailable) {
			t.Errorf("an idempotent call in a partition: %v, want ErrUnavailable", err)
		}
	})
	rig.waitFor(t, "the silence noticed", func(*rtApp) bool { return len(rig.lost()) >= 1 })
	missed := []string{rig.publish(t, 2), rig.publish(t, 3)}

	healed := p.accepted.Load()
	p.setBlackhole(false)
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		d, err := s.limiter.Allow(ctx, ratelimit.Subject{UserID: uuid.NewString()}, vm1.APIRouteMessagesSend)
		return err == nil && d.Allowed && !d.Degraded
	}) {
		t.Fatal("go-redis did not reconnect after the partition healed")
	}
	if p.accepted.Load() == healed {
		t.Error("calls succeed again, but no new connection was made after the heal")
	}
	if out, err := s.keeper.Do(ctx, req, calls.Call(req.Key, idemtest.Created(), nil)); err != nil || out.Replayed {
		t.Errorf("the idempotent call after the heal: %+v %v, want it to run", out, err)
	}
	if calls.Runs.Load() != 1 || s.sideEffects(t, req.Key) != 1 {
		t.Errorf("runs %d, side effects %d; want 1", calls.Runs.Load(), s.sideEffects(t, req.Key))
	}
	rig.waitFor(t, "reconciled after the heal", func(a *rtApp) bool {
		return lastGapIs(pubsub.Reconnected)(a) && hasApplied(missed...)(a)
	})
	after := rig.publish(t, 4)
	rig.waitFor(t, "an event after the heal", wasDelivered(after))
	if st := rig.sub.Stats(); st.Reconnects < 1 {
		t.Errorf("stats %+v, want a reconnect", st)
	}
	scripttest.AuditTTLs(t, a.adminDB(vm1.DB0), vm1.Keys)
}

// Seed 000 §12 "reconnect backoff": the server's host refuses connections
// (the proxy drops every connection and closes each new one). Calls fail fast,
// so a completed idempotent call is answered from PostgreSQL; a new one fails
// closed. The Subscriber's failed attempts are spaced by its backoff, doubled
// from MinBackoff to MaxBackoff (each gap at least the backoff it had then),
// instead of a tight loop. Once connections are accepted again, everything
// recovers by itself.
func TestResilienceRefusedConnectionsBackOff(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a, p, s := networkStack(t)
	const minBackoff, maxBackoff = 20 * time.Millisecond, 200 * time.Millisecond
	rig := startRTRig(t, a.userClientWith(t, "api_backend", vm1.DB1, subscriberVia(p)), a.userClient(t, "api_backend", vm1.DB1),
		pubsub.Options{PingEvery: 200 * time.Millisecond, MinBackoff: minBackoff, MaxBackoff: maxBackoff})
	rig.waitFor(t, "subscribed", lastGapIs(pubsub.Subscribed))
	done := idemtest.Request(t, vm1.IdemScopeDialogCreate, "before the refusal")
	var calls idemtest.Counter
	if _, err := s.keeper.Do(ctx, done, calls.Call(done.Key, idemtest.Created(), nil)); err != nil {
		t.Fatal(err)
	}

	p.setRefuse(true)
	p.dropAll()
	const deadline = 2 * time.Second
	withDeadline(t, deadline, "completed idempotent call", func(ctx context.Context) {
		if out, err := s.keeper.Do(ctx, done, calls.Call(done.Key, idemtest.Created(), nil)); err != nil || out.Source != idempotency.SourceDurable {
			t.Errorf("a completed call with Redis refusing: %+v %v, want its durable answer", out, err)
		}
	})
	fresh := idemtest.Request(t, vm1.IdemScopeDialogCreate, "during the refusal")
	var freshCalls idemtest.Counter
	withDeadline(t, deadline, "new idempotent call", func(ctx context.Context) {
		if _, err := s.keeper.Do(ctx, fresh, freshCalls.Call(fresh.Key, idemtest.Created(), nil)); !errors.Is(err, idempotency.ErrUnavailable) {
			t.Errorf("a new call with Redis refusing: %v, want ErrUnavailable", err)
		}
	})
	withDeadline(t, deadline, "fail-closed route", func(ctx context.Context) {
		if d, err := s.limiter.Allow(ctx, ratelimit.Subject{UserID: uuid.NewString()}, vm1.APIRouteMessagesSend); !errors.Is(err, ratelimit.ErrUnavailable) {
			t.Errorf("fail-closed route with Redis refusing: %+v %v", d, err)
		}
	})
	// Seven losses: the one the drop caused, then six failed attempts, the last
	// ones MaxBackoff apart.
	rig.waitFor(t, "reconnect attempts", func(*rtApp) bool { return len(rig.lost()) >= 7 })
	rig.app.mu.Lock()
	lost := rig.lost()[:7]
	rig.app.mu.Unlock()
	backoff := minBackoff
	for i := 1; i < len(lost); i++ {
		if gap := lost[i].Sub(lost[i-1]); gap < backoff {
			t.Errorf("attempt %d came %v after the previous failure, want at least the backoff %v", i, gap, backoff)
		}
		backoff = min(2*backoff, maxBackoff)
	}

	p.setRefuse(false)
	rig.waitFor(t, "reconciled after the refusal", lastGapIs(pubsub.Reconnected))
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		d, err := s.limiter.Allow(ctx, ratelimit.Subject{UserID: uuid.NewString()}, vm1.APIRouteMessagesSend)
		return err == nil && d.Allowed && !d.Degraded
	}) {
		t.Fatal("calls did not succeed again")
	}
	if out, err := s.keeper.Do(ctx, fresh, freshCalls.Call(fresh.Key, idemtest.Created(), nil)); err != nil || out.Replayed {
		t.Errorf("the refused call, retried: %+v %v, want it to run", out, err)
	}
	ev := rig.publish(t, 1)
	rig.waitFor(t, "an event after the refusal", wasDelivered(ev))
	if calls.Runs.Load() != 1 || freshCalls.Runs.Load() != 1 || s.sideEffects(t, done.Key) != 1 || s.sideEffects(t, fresh.Key) != 1 {
		t.Errorf("runs %d and %d; want 1 each", calls.Runs.Load(), freshCalls.Runs.Load())
	}
}

// Dropped connections (the proxy closes every open connection, both ways,
// while the server is fine): go-redis replaces them by itself. 32 concurrent
// requests of one subject right after the drop get no error and exactly the
// limit (20) is allowed: a dropped connection never made a request count
// twice. 8 concurrent new idempotent calls each run once; the Subscriber
// reconciles and receives again.
func TestResilienceDroppedConnectionsAreReplaced(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a, p, s := networkStack(t)
	rig := startRTRig(t, a.userClientWith(t, "api_backend", vm1.DB1, subscriberVia(p)), a.userClient(t, "api_backend", vm1.DB1),
		pubsub.Options{PingEvery: 200 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	rig.waitFor(t, "subscribed", lastGapIs(pubsub.Subscribed))
	policy := ratelimit.Policy{vm1.APIRouteDialogsCreate: {Algorithm: ratelimit.SlidingWindow, Degraded: degraded.FailClosed, Limits: []ratelimit.Limit{
		{Scope: ratelimit.ScopeUser, Limit: 20, Window: time.Minute},
	}}}
	l, err := ratelimit.New(s.scripts, policy, ratelimit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	accepted := p.accepted.Load()

	p.dropAll()
	subject := ratelimit.Subject{UserID: uuid.NewString()}
	var allowed, denied, failed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d, err := l.Allow(ctx, subject, vm1.APIRouteDialogsCreate)
			switch {
			case err != nil || d.Degraded:
				failed.Add(1)
				t.Errorf("after the drop: %+v %v", d, err)
			case d.Allowed:
				allowed.Add(1)
			default:
				denied.Add(1)
			}
		}()
	}
	reqs := make([]idempotency.Request, 8)
	runs := make([]idemtest.Counter, 8)
	for i := range reqs {
		reqs[i] = idemtest.Request(t, vm1.IdemScopeDialogCreate, "after the drop")
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if out, err := s.keeper.Do(ctx, reqs[i], runs[i].Call(reqs[i].Key, idemtest.Created(), nil)); err != nil || out.Replayed {
				failed.Add(1)
				t.Errorf("idempotent call %d after the drop: %+v %v", i, out, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if allowed.Load() != 20 || denied.Load() != 12 || failed.Load() != 0 {
		t.Errorf("after the drop: %d allowed, %d denied, %d failed; want 20, 12, 0", allowed.Load(), denied.Load(), failed.Load())
	}
	for i, req := range reqs {
		if runs[i].Runs.Load() != 1 || s.sideEffects(t, req.Key) != 1 {
			t.Errorf("call %d: runs %d, side effects %d; want 1", i, runs[i].Runs.Load(), s.sideEffects(t, req.Key))
		}
	}
	if p.accepted.Load() == accepted {
		t.Error("no new connection was made after the drop")
	}
	rig.waitFor(t, "reconciled after the drop", lastGapIs(pubsub.Reconnected))
	ev := rig.publish(t, 1)
	rig.waitFor(t, "an event after the drop", wasDelivered(ev))
}
