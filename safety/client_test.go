package safety

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

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
	if _, err := call(ctx, c, time.Second, down); !errors.Is(err, errUnavailable) || !c.Degraded() {
		t.Fatalf("first outage: %v, degraded %v", err, c.Degraded())
	}
	for i := 0; i < 10; i++ {
		if _, err := call(ctx, c, time.Second, up); !errors.Is(err, errUnavailable) {
			t.Fatalf("skipped call: %v", err)
		}
	}
	if tries != 1 {
		t.Fatalf("%d calls reached Redis within the retry interval, want 1", tries)
	}
	clock.Advance(time.Second)
	if v, err := call(ctx, c, time.Second, up); err != nil || v != 1 || c.Degraded() {
		t.Fatalf("retry after the interval: %v %v, degraded %v", v, err, c.Degraded())
	}
	if h := c.Health(ctx); h.Status != HealthOK || h.Critical {
		t.Fatalf("health: %+v", h)
	}
	if got := metric(t, reg, "han_safety_redis_degradations_total", nil); got != 1 {
		t.Fatalf("degradations %v, want 1", got)
	}
	// The caller's own cancellation says nothing about Redis.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := call(cctx, c, time.Second, down); !errors.Is(err, context.Canceled) || c.Degraded() {
		t.Fatalf("cancelled: %v, degraded %v", err, c.Degraded())
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	sc := luatest.NewServer(nil).Scripter()
	if _, err := New(nil, Options{}); err == nil {
		t.Fatal("nil client accepted")
	}
	if _, err := New(sc, Options{CacheTimeout: -time.Second}); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("negative timeout: %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := New(sc, Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(sc, Options{Registerer: reg}); err == nil {
		t.Fatal("two Clients registered the same metrics")
	}
	if _, err := NewWaker(mustNew(t, sc)); !errors.Is(err, ErrNoPubSub) {
		t.Fatalf("a Waker without Pub/Sub: %v", err)
	}
}

func mustNew(t *testing.T, rdb redis.Scripter) *Client {
	t.Helper()
	c, err := New(rdb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
