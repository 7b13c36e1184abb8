package luatest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// startRedis starts a private redis-server (internal/redistest: a free loopback
// port, a temporary directory, never 6379, killed when the test ends) and returns
// a RESP2 client to it, as the harness converts replies: with RESP3 a script's
// {double=...}, {map=...} and {set=...} replies reach go-redis as float64 and maps.
func startRedis(t testing.TB) *redis.Client {
	t.Helper()
	srv := redistest.Start(t)
	client := srv.Client(0, func(o *redis.Options) { o.Protocol = 2; o.MaxRetries = -1 })
	info, err := client.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("redis-server on %s (%s)", srv.Addr, versionLine(info))
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
