package sizing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// scratch is a throwaway redis-server on a free loopback port, in a temporary
// directory, with nothing on disk; stop kills it and removes the directory.
type scratch struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

const scratchTimeout = 15 * time.Second

// startScratch starts bin (a redis-server) and waits until it answers PING.
func startScratch(ctx context.Context, bin string) (*scratch, error) {
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("sizing needs a scratch redis-server: %w", err)
	}
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		s, err := launch(ctx, path)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func launch(ctx context.Context, bin string) (*scratch, error) {
	dir, err := os.MkdirTemp("", "luagen-sizing-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	conf := strings.Join([]string{
		"port " + strconv.Itoa(port), "bind 127.0.0.1", "protected-mode yes", "daemonize no",
		"dir " + dir, "logfile " + filepath.Join(dir, "redis.log"), `save ""`, "appendonly no",
		// DEBUG POPULATE fills the keyspace for the throughput measurement.
		"enable-debug-command local",
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "redis.conf"), []byte(conf), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, filepath.Join(dir, "redis.conf"))
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &scratch{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(scratchTimeout)
	for {
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("the scratch redis-server exited: %s", strings.TrimSpace(lastLines(string(log), 3)))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		default:
		}
		// Our own process answers: the port was free when it bound.
		if err := c.Ping(ctx).Err(); err == nil && s.ours(ctx, c) {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("the scratch redis-server did not answer within " + scratchTimeout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ours reports whether the server answering is the process started (its pid).
func (s *scratch) ours(ctx context.Context, c *redis.Client) bool {
	info, err := c.Info(ctx, "server").Result()
	return err == nil && strings.Contains(info, "process_id:"+strconv.Itoa(s.cmd.Process.Pid)+"\r")
}

func (s *scratch) stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
	_ = os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("no free loopback port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port != 6379 {
			return port, nil
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
