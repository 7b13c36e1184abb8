package safetyredis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Which failures mean "Redis is unavailable" (and which of those start degraded
// mode), and which are answers or the caller's own mistakes.
func TestOutageClassification(t *testing.T) {
	timeoutErr := &net.OpError{Op: "read", Net: "tcp", Err: &timeoutError{}}
	cases := []struct {
		name   string
		err    error
		reason string
		trip   bool
	}{
		{"no error", nil, "", false},
		{"connection refused", fmt.Errorf("script cache_get: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}), "unreachable", true},
		{"EOF", fmt.Errorf("script cache_get: %w", io.EOF), "unreachable", true},
		{"read timeout", fmt.Errorf("script cache_get: %w", timeoutErr), "timeout", true},
		{"deadline", fmt.Errorf("script cache_get: %w", context.DeadlineExceeded), "timeout", true},
		{"client closed", redis.ErrClosed, "closed", true},
		{"loading", &runtime.ScriptError{Script: "cache_get", Code: "LOADING", Message: "LOADING Redis is loading the dataset in memory"}, "busy", true},
		{"busy script", &runtime.ScriptError{Script: "cache_get", Code: "BUSY", Message: "BUSY Redis is busy running a script"}, "busy", true},
		{"out of memory", &runtime.ScriptError{Script: "cache_set", Code: "OOM", Message: "OOM command not allowed"}, "out-of-memory", false},
		{"NOPERM", &runtime.ScriptError{Script: "cache_set", Code: "NOPERM", Message: "NOPERM no permissions"}, "", false},
		{"script error", &runtime.ScriptError{Script: "safety_rate_limit", Code: "BAD_ARG", Message: "BAD_ARG"}, "", false},
		{"plain reply", &luatest.ErrorReply{Msg: "NOPERM this user has no permissions to access one of the channels"}, "", false},
		{"bad argument", &runtime.ArgError{Script: "cache_set", Arg: "ttl", Reason: "too long"}, "", false},
		{"bad reply", &runtime.ReplyError{Script: "cache_get", Reason: "short"}, "", false},
	}
	for _, c := range cases {
		reason, trip := outage(c.err)
		if reason != c.reason || trip != c.trip {
			t.Errorf("%s: (%q, %v), want (%q, %v)", c.name, reason, trip, c.reason, c.trip)
		}
	}
}

type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }

// Degraded mode on a fake clock: one outage trips it, then only one call per
// RetryInterval tries Redis, and the first answer ends it.
func TestDegradedModeRetriesOncePerInterval(t *testing.T) {
	clock := luatest.NewClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	c, err := New(luatest.NewServer(clock).Scripter(), Options{Registerer: reg, Now: clock.Now, RetryInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tries := 0
	down := func(context.Context) (int, error) { tries++; return 0, io.EOF }
	up := func(context.Context) (int, error) { tries++; return 1, nil }
	if _, err := Do(ctx, c, time.Second, down); !errors.Is(err, ErrUnavailable) || !c.Degraded() {
		t.Fatalf("first outage: %v, degraded %v", err, c.Degraded())
	}
	for i := 0; i < 10; i++ {
		if _, err := Do(ctx, c, time.Second, up); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("skipped call: %v", err)
		}
	}
	if tries != 1 {
		t.Fatalf("%d calls reached Redis within the retry interval, want 1", tries)
	}
	clock.Advance(time.Second)
	if v, err := Do(ctx, c, time.Second, up); err != nil || v != 1 || c.Degraded() {
		t.Fatalf("retry after the interval: %v %v, degraded %v", v, err, c.Degraded())
	}
	if h := c.Health(ctx); h.Status != HealthOK || h.Critical {
		t.Fatalf("health: %+v", h)
	}
	if got := promtest.Value(t, reg, "han_safety_redis_degradations_total", nil); got != 1 {
		t.Fatalf("degradations %v, want 1", got)
	}
	// The caller's own cancellation says nothing about Redis.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Do(cctx, c, time.Second, down); !errors.Is(err, context.Canceled) || c.Degraded() {
		t.Fatalf("cancelled: %v, degraded %v", err, c.Degraded())
	}
}

// A call Redis has not answered by the caller's own deadline, shorter than the
// call's timeout, is an outage: the Client degrades. Calls whose work ignores its
// context (go-redis without ContextTimeoutEnabled) run on at most MaxInFlight
// goroutines; a call that finds no free one is an outage at its deadline too.
func TestCallerDeadlineIsAnOutageAndStuckCallsAreBounded(t *testing.T) {
	c, err := New(luatest.NewServer(nil).Scripter(), Options{RetryInterval: time.Nanosecond, MaxInFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var started, running atomic.Int64
	hung := func(context.Context) (int, error) {
		started.Add(1)
		running.Add(1)
		defer running.Add(-1)
		<-release // deaf to its context, like a read waiting for go-redis's ReadTimeout
		return 0, io.EOF
	}
	for i, outages := 0, 0; outages < 10; i++ {
		if i == 100 {
			t.Fatalf("%d of 100 calls were outages, want 10", outages)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		_, err := Do(ctx, c, time.Hour, hung)
		cancel()
		switch {
		case errors.Is(err, ErrUnavailable):
			outages++
		case errors.Is(err, context.DeadlineExceeded):
			// The 10 ms ran out before the call began (a loaded machine can
			// pause this goroutine that long): the documented error of a ctx
			// that had already ended, not what this test is about.
		default:
			t.Fatalf("call %d past the caller's deadline: %v", i, err)
		}
	}
	if !c.Degraded() || c.currentReason() != "timeout" {
		t.Fatalf("degraded %v (%q), want degraded by a timeout", c.Degraded(), c.currentReason())
	}
	if n := started.Load(); n != 2 {
		t.Fatalf("%d calls started on goroutines of their own, want MaxInFlight 2", n)
	}
	close(release)
	if !redistest.WaitFor(context.Background(), 5*time.Second, func() bool { return running.Load() == 0 }) {
		t.Fatal("the stuck calls never ended")
	}
	// Their slots are free again: the next call runs.
	if v, err := Do(context.Background(), c, time.Second, func(context.Context) (int, error) { return 7, nil }); err != nil || v != 7 || c.Degraded() {
		t.Fatalf("after the stuck calls ended: %v %v, degraded %v", v, err, c.Degraded())
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	sc := luatest.NewServer(nil).Scripter()
	if _, err := New(nil, Options{}); err == nil {
		t.Fatal("nil client accepted")
	}
	if _, err := New(sc, Options{CacheTimeout: -time.Second}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("negative timeout: %v", err)
	}
	if _, err := New(sc, Options{MaxInFlight: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("negative MaxInFlight: %v", err)
	}
	// Two Clients on one registry share its collectors: they count together.
	reg := prometheus.NewRegistry()
	first, err := New(sc, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	second, err := New(sc, Options{Registerer: reg})
	if err != nil {
		t.Fatalf("a second Client on one registry: %v", err)
	}
	if second.m.degraded != first.m.degraded || second.m.degradations != first.m.degradations {
		t.Fatal("the second Client registered collectors of its own")
	}
}
