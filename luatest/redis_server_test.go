package luatest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startRedis starts a private redis-server on a free loopback port for the test
// and returns a client to it. The server saves nothing and is killed when the
// test ends. It never uses the default port 6379.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH: the conformance tests compare the harness with a real Redis 7.0 (install it, e.g. apt-get install redis-server): %v", err)
	}
	port := freePort(t)
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// RESP2, as the harness converts replies: with RESP3 a script's {double=...},
	// {map=...} and {set=...} replies reach go-redis as float64 and maps.
	client := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), Protocol: 2, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() {
		_ = client.Close()
		_ = cmd.Process.Kill()
		<-exited
		_ = logf.Close()
	})

	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			exited <- werr
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("redis-server exited before answering PING (%v):\n%s", werr, log)
		case <-time.After(20 * time.Millisecond): // poll interval, bounded by the deadline below
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d did not answer PING within 10s: %v", port, err)
		}
	}
	info, err := client.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("redis-server on 127.0.0.1:%d (%s)", port, versionLine(info))
	return client
}

func versionLine(info string) string {
	for _, line := range splitLines(info) {
		if len(line) > 14 && line[:14] == "redis_version:" {
			return line
		}
	}
	return "unknown version"
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, trimCR(s[start:i]))
			start = i + 1
		}
	}
	return append(out, trimCR(s[start:]))
}

func trimCR(s string) string {
	if len(s) > 0 && s[len(s)-1] == '\r' {
		return s[:len(s)-1]
	}
	return s
}

// freePort picks a free loopback port other than 6379.
func freePort(t *testing.T) int {
	t.Helper()
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port != 6379 {
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// flush empties the private test server (never a server on 6379).
func flush(t *testing.T, c *redis.Client) {
	t.Helper()
	if opt := c.Options(); opt.Addr == "127.0.0.1:6379" || opt.Addr == "localhost:6379" {
		t.Fatal("refusing to flush a Redis on port 6379")
	}
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// normalize turns a go-redis reply (or the harness's) into a comparable value:
// int64, string, nil, []any, and "(error) msg" for errors.
func normalize(v any, err error) any {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return "(error) " + err.Error()
	}
	return normalizeValue(v)
}

func normalizeValue(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalizeValue(e)
		}
		return out
	case error:
		return "(error) " + v.Error()
	}
	return v
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
