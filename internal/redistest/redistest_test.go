package redistest

import (
	"context"
	"net"
	"strings"
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

// A port another process holds is never mistaken for the server's: Start sees
// its own server fail to bind and moves to another port.
func TestStartDoesNotAdoptAnotherServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 64)
				for {
					if _, err := conn.Read(buf); err != nil {
						return
					}
					conn.Write([]byte("+PONG\r\n")) // answers like a Redis would
				}
			}()
		}
	}()
	taken := l.Addr().(*net.TCPAddr).Port
	s := Start(t, func(c *config) { c.port = taken })
	if s.Port == taken {
		t.Fatalf("Start adopted the process already on port %d", taken)
	}
	info, err := s.Client(0).Info(context.Background(), "server").Result()
	if err != nil || !strings.Contains(info, "redis_version:") {
		t.Fatalf("the started server does not answer as redis-server: %v", err)
	}
}

func TestCommandCalls(t *testing.T) {
	ctx := context.Background()
	c := Start(t).Client(0)
	for i := 0; i < 3; i++ {
		if err := c.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ScriptLoad(ctx, "return 1").Err(); err != nil {
		t.Fatal(err)
	}
	if n := CommandCalls(t, c, "set"); n != 3 {
		t.Fatalf("set: %d calls, want 3", n)
	}
	if n := CommandCalls(t, c, "script|load"); n != 1 {
		t.Fatalf("script|load: %d calls, want 1", n)
	}
	if n := CommandCalls(t, c, "hset"); n != 0 {
		t.Fatalf("hset: %d calls, want 0", n)
	}
}
