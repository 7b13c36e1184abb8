package redistest

import (
	"context"
	"testing"
	"time"
)

func TestStartStopRestartWithAOF(t *testing.T) {
	ctx := context.Background()
	s := Start(t, WithAOF())
	if s.Port == 6379 {
		t.Fatal("started on the shared port")
	}
	c := s.Client(0)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if s.Running() {
		t.Fatal("still running after Stop")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Stop")
	}
	s.Restart()
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after restart with AOF: %q, %v; want v", got, err)
	}
}

func TestWaitFor(t *testing.T) {
	start := time.Now()
	n := 0
	if !WaitFor(context.Background(), time.Second, func() bool { n++; return n == 3 }) {
		t.Fatal("condition that becomes true was reported false")
	}
	if WaitFor(context.Background(), 20*time.Millisecond, func() bool { return false }) {
		t.Fatal("condition that never holds was reported true")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("WaitFor did not respect its timeout")
	}
}
