// Package redistest starts real redis-server processes for tests: each on a free
// loopback port, in the test's own temporary directory, stopped when the test ends.
// It never touches the shared server on port 6379.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds how long a server may take to answer its first PING.
const startTimeout = 15 * time.Second

// Server is one redis-server process started by a test.
type Server struct {
	t    testing.TB
	Port int
	Addr string // 127.0.0.1:port
	Dir  string // working directory: config, log, AOF/RDB files

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	admin *redis.Client

	adminUser, adminPassword string // how Admin logs in; "" the default user
}

type config struct {
	port                     int // first port to try (tests of this package); 0: a free one
	lines                    []string
	acl                      string
	funcs                    []func(port int, dir string) []string
	adminUser, adminPassword string
}

// Option changes how the server is configured.
type Option func(*config)

// WithConfig adds redis.conf directives, one per string ("maxmemory 10mb").
func WithConfig(lines ...string) Option {
	return func(c *config) { c.lines = append(c.lines, lines...) }
}

// WithACL writes content as the server's aclfile (users.acl in its directory).
func WithACL(content string) Option {
	return func(c *config) { c.acl = content }
}

// WithConfigFor adds directives computed from the server's port and directory
// once they are chosen (e.g. a generated config whose port and aclfile must match).
func WithConfigFor(f func(port int, dir string) []string) Option {
	return func(c *config) { c.funcs = append(c.funcs, f) }
}

// WithAdmin makes Admin log in as user with password (a user of the server's
// aclfile with every right): for a server whose default user is off.
func WithAdmin(user, password string) Option {
	return func(c *config) { c.adminUser, c.adminPassword = user, password }
}

// ACLPath is where WithACL writes the aclfile inside a server's directory.
func ACLPath(dir string) string { return filepath.Join(dir, "users.acl") }

// WithAOF turns on the append-only file, fsynced every second.
func WithAOF() Option {
	return WithConfig("appendonly yes", "appendfsync everysec")
}

// Need skips the test under -short (go test -short runs without redis-server),
// and fails it when redis-server is not on PATH. Start calls it; a test that
// runs redis-server's other tools itself (redis-cli, redis-check-aof) calls it
// first.
func Need(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs redis-server: skipped under -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not on PATH (make test installs it; or run go test -short): %v", err)
	}
}

// Start starts a server and waits until it answers. Under -short the test is
// skipped (see Need); it fails when redis-server is not installed or does not
// come up. The server is killed when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	Need(t)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	s := &Server{t: t, Dir: t.TempDir(), adminUser: c.adminUser, adminPassword: c.adminPassword}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s.Port = freePort(t)
		if attempt == 0 && c.port != 0 {
			s.Port = c.port
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
		if err := s.writeConfig(c); err != nil {
			t.Fatal(err)
		}
		if lastErr = s.launch(bin); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

// freePort asks the kernel for a free loopback port. Another process may take it
// before redis-server binds; Start then retries with another.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("no free loopback port: %v", err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if port == 6379 {
		return freePort(t)
	}
	return port
}

func (s *Server) writeConfig(c config) error {
	lines := []string{
		"port " + strconv.Itoa(s.Port),
		"bind 127.0.0.1",
		"protected-mode yes",
		"daemonize no",
		"dir " + s.Dir,
		"logfile " + s.logPath(),
		`save ""`,
		"appendonly no",
	}
	if c.acl != "" {
		aclPath := ACLPath(s.Dir)
		if err := os.WriteFile(aclPath, []byte(c.acl), 0o600); err != nil {
			return err
		}
		lines = append(lines, "aclfile "+aclPath)
	}
	lines = append(lines, c.lines...)
	for _, f := range c.funcs {
		lines = append(lines, f(s.Port, s.Dir)...)
	}
	return os.WriteFile(s.ConfigPath(), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// ConfigPath is the server's redis.conf.
func (s *Server) ConfigPath() string { return filepath.Join(s.Dir, "redis.conf") }

func (s *Server) launch(bin string) error {
	// Readiness is read from this launch's part of our own log, so a server of
	// another process that took the port in between is never mistaken for ours.
	var logStart int64
	if fi, err := os.Stat(s.logPath()); err == nil {
		logStart = fi.Size()
	}
	cmd := exec.Command(bin, s.ConfigPath())
	cmd.Dir = s.Dir
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := s.waitReady(done, logStart); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%w; log:\n%s", err, s.Log())
	}
	return nil
}

// waitReady waits until this launch's log says the server accepts connections
// and the port answers PING (any reply, even NOAUTH), the process exits, or the
// deadline passes.
func (s *Server) waitReady(done <-chan struct{}, logStart int64) error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("redis-server on port %d exited", s.Port)
		default:
		}
		if s.logSince(logStart, "Ready to accept connections") && answers(s.Addr) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on port %d did not become ready within %s", s.Port, startTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *Server) logPath() string { return filepath.Join(s.Dir, "redis.log") }

// logSince reports whether the log, from offset on, contains text.
func (s *Server) logSince(offset int64, text string) bool {
	b, err := os.ReadFile(s.logPath())
	if err != nil || int64(len(b)) < offset {
		return false
	}
	return strings.Contains(string(b[offset:]), text)
}

// answers reports whether a RESP server at addr replies to PING.
func answers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-"))
}

// Kill stops the server at once (SIGKILL), as a crash would. Data not yet on disk is lost.
func (s *Server) Kill() { s.stop(os.Kill) }

// Stop shuts the server down with SIGTERM, which lets it flush its AOF.
func (s *Server) Stop() { s.stop(os.Interrupt) }

func (s *Server) stop(sig os.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Exited waits, at most timeout, for the process to end by itself (after a
// SHUTDOWN it was sent, or a crash) and reports whether it did; it then counts
// as stopped (Running is false, Restart may start it again). It sends no signal.
func (s *Server) Exited(timeout time.Duration) bool {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return true
	}
	select {
	case <-done:
		s.mu.Lock()
		if s.cmd == cmd {
			s.cmd = nil
		}
		s.mu.Unlock()
		return true
	case <-time.After(timeout):
		return false
	}
}

// Restart starts the server again on the same port with the same directory and
// configuration (so it reloads its AOF or RDB). The server must be stopped.
func (s *Server) Restart() {
	s.t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.launch(bin); err != nil {
		s.t.Fatalf("restart: %v", err)
	}
}

// Running reports whether the process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Log is the server's log file.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath())
	return string(b)
}

// URL is a redis:// URL of the server for user (empty: none) and password.
func (s *Server) URL(user, password string, db int) string {
	u := url.URL{Scheme: "redis", Host: s.Addr, Path: "/" + strconv.Itoa(db)}
	if user != "" || password != "" {
		u.User = url.UserPassword(user, password)
	}
	return u.String()
}

// Client returns a client of db as the default user, closed when the test ends.
// Extra options change the redis.Options (user, protocol, timeouts).
func (s *Server) Client(db int, opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: s.Addr, DB: db}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Admin is one client of db 0 as the default user (or WithAdmin's), made on
// first use and closed when the test ends: for polling and administration,
// where a new client per call would pile up connections until the test ends.
func (s *Server) Admin() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, PoolSize: 2, DialTimeout: time.Second, ReadTimeout: 5 * time.Second,
			Username: s.adminUser, Password: s.adminPassword})
		s.admin = c
		s.t.Cleanup(func() { _ = c.Close() })
	}
	return s.admin
}

// WaitFor polls cond every few milliseconds until it is true or timeout passes,
// and reports whether it became true. Tests use it instead of sleeping.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	return pollEvery(ctx, timeout, 5*time.Millisecond, cond)
}

// CommandCalls is how often the server c is connected to ran cmd since it
// started (or since CONFIG RESETSTAT), from INFO commandstats; cmd is in
// lower case, a subcommand after '|' (e.g. "script|load").
func CommandCalls(t testing.TB, c *redis.Client, cmd string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			return n
		}
	}
	return 0
}

// Pause freezes the server process (SIGSTOP): it keeps its port and its
// connections, and accepts new ones into the kernel's backlog, but answers
// nothing, as a hung server does, until Resume.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		s.t.Fatalf("redistest: signal %v: the server is not running", sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v: %v", sig, err)
	}
}
