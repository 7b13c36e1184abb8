package luatest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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

// respConn is a bare RESP2 connection to a test server: its replies keep the
// RESP type go-redis hides (a status reply is a Status, a bulk string a string).
type respConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRESP(t testing.TB, addr string) *respConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &respConn{conn: conn, r: bufio.NewReader(conn)}
}

// do sends one command and reads its reply: int64, string, Status, nil, []any
// (with *ErrorReply for an error inside an array); a top-level error reply is
// returned as an *ErrorReply error.
func (c *respConn) do(args ...string) (any, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := c.conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return nil, err
	}
	v, err := c.read()
	if err != nil {
		return nil, err
	}
	if e, ok := v.(*ErrorReply); ok {
		return nil, e
	}
	return v, nil
}

func (c *respConn) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty RESP line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return Status(body), nil
	case '-':
		return &ErrorReply{Msg: body}, nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected RESP line %q", line)
}

// eval runs EVAL on the connection with keys and args encoded as the harness
// encodes them.
func (c *respConn) eval(src string, keys []string, args []any) (any, error) {
	argv, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	cmd := append([]string{"eval", src, strconv.Itoa(len(keys))}, keys...)
	return c.do(append(cmd, argv...)...)
}

// doTyped is Server.Do with the reply's RESP types kept (Status for a status reply).
func (s *Server) doTyped(args ...string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.clientCall(append([]string(nil), args...), s.clock.unixMilli(), nil)
	if e, ok := r.(errReply); ok {
		return nil, &ErrorReply{Msg: string(e)}
	}
	return replyToTyped(r), nil
}
