package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/elang/outbox"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

const password = "s3cret-Pa55w0rd-of-the-deployment"

func call(ctx context.Context, env map[string]string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(ctx, args, func(k string) string { return env[k] }, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpAndUsage(t *testing.T) {
	code, out, _ := call(context.Background(), nil, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, c := range []string{"platform:setup", "outbox:work", "outbox:dispatch", "queue:work", "operations:prune"} {
		if !strings.Contains(out, "\n  "+c+" ") {
			t.Fatalf("--help does not list %s:\n%s", c, out)
		}
	}
	if code, _, errs := call(context.Background(), nil, "outbox:relay"); code != 2 || !strings.Contains(errs, `unknown command "outbox:relay"`) {
		t.Fatalf("unknown command: exit %d, %q", code, errs)
	}
	if code, _, _ := call(context.Background(), nil); code != 2 {
		t.Fatalf("no command: exit %d, want 2", code)
	}
	if code, _, errs := call(context.Background(), nil, "outbox:dispatch", "--help"); code != 0 || !strings.Contains(errs, "-batch") {
		t.Fatalf("outbox:dispatch --help: exit %d, %q", code, errs)
	}
	if code, _, errs := call(context.Background(), nil, "outbox:dispatch", "--batch", "0"); code != 2 || !strings.Contains(errs, "--batch 0") {
		t.Fatalf("--batch 0: exit %d, %q", code, errs)
	}
	if code, _, errs := call(context.Background(), map[string]string{}, "platform:setup"); code != 2 || !strings.Contains(errs, "DATABASE_URL is not set") {
		t.Fatalf("no DATABASE_URL: exit %d, %q", code, errs)
	}
	env := map[string]string{"DATABASE_URL": "postgres://app:" + password + "@127.0.0.1:5432/test", "ELANG_REDIS_URL": "redis://:" + password + "@127.0.0.1:1/3", "APP_URL": "https://acme.example"}
	if code, _, errs := call(context.Background(), env, "outbox:dispatch"); code != 2 || !strings.Contains(errs, "names database 3") || strings.Contains(errs, password) {
		t.Fatalf("Redis database 3: exit %d, %q (want 2, no password)", code, errs)
	}
}

// The commands end to end on real PostgreSQL and Redis (with a password): setup
// creates the tables, dispatch relays what is pending with a progress line, queue:work
// runs each job once through --exec, prune removes what is past retention; a failure
// exits 1, and the password appears in no output.
func TestCommandsEndToEnd(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Schema(t, 8) // no migration: platform:setup makes the tables
	var schema string
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, redistest.WithConfig("requirepass "+password))
	env := map[string]string{
		"DATABASE_URL":       pgtest.URL + "&search_path=" + schema,
		"ELANG_REDIS_URL":    srv.URL("", password, 0),
		"ELANG_REDIS_PREFIX": "acme:production:",
	}
	var all strings.Builder
	must := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := call(ctx, env, args...)
		all.WriteString(out + errs)
		if code != want {
			t.Fatalf("elang %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errs)
		}
		return out + errs
	}
	must(0, "platform:setup")
	must(0, "platform:setup") // idempotent
	write(t, pool, 120, 30)
	out := must(0, "outbox:dispatch", "--batch", "50")
	if !strings.Contains(out, "outbox:dispatch: 150 rows relayed (150 appended, 0 already in the stream), 0 failed") {
		t.Fatalf("dispatch output: %q", out)
	}
	admin := srv.Client(0, func(o *redis.Options) { o.Password = password })
	if n, err := admin.XLen(ctx, "acme:production:outbox:stream").Result(); err != nil || n != 150 {
		t.Fatalf("stream length %d %v, want 150", n, err)
	}

	// queue:work runs the 30 jobs, each once, through a shell appending its payload.
	dir := t.TempDir()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		code, _, _ := call(wctx, env, "queue:work", "--queue", "mail", "--consumer", "w1", "--exec", "/bin/sh", "--", "-c", `cat >> "$0/jobs"; echo " $ELANG_JOB_ID" >> "$0/jobs"`, dir)
		done <- code
	}()
	if !redistest.WaitFor(ctx, 30*time.Second, func() bool {
		var n int64
		_ = pool.QueryRow(ctx, "SELECT count(*) FROM elang_jobs WHERE state = 'done'").Scan(&n)
		return n == 30
	}) {
		t.Fatal("queue:work did not finish the 30 jobs")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("queue:work stopped with exit %d, want 0", code)
	}
	b, err := os.ReadFile(filepath.Join(dir, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 30 || !strings.Contains(string(b), "job 29 ") {
		t.Fatalf("the program ran %d times, want 30:\n%s", lines, b)
	}

	// Age the delivered rows; prune removes them, not the pending ones.
	write(t, pool, 5, 0)
	if _, err := pool.Exec(ctx, "UPDATE elang_outbox SET delivered_at = delivered_at - interval '8 days' WHERE delivered_at IS NOT NULL"); err != nil {
		t.Fatal(err)
	}
	out = must(0, "operations:prune", "--history", "720h")
	if !strings.Contains(out, "operations:prune: removed 150 outbox rows, 0 events, 0 jobs") {
		t.Fatalf("prune output: %q", out)
	}

	// Redis gone: dispatch fails with exit 1, the 5 rows stay pending.
	srv.Kill()
	out = must(1, "outbox:dispatch")
	if !strings.Contains(out, "outbox: redis") {
		t.Fatalf("dispatch without Redis: %q", out)
	}
	var pending int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL").Scan(&pending); err != nil || pending != 5 {
		t.Fatalf("pending %d %v, want 5", pending, err)
	}
	// outbox:work serves its metrics: with Redis down the pending count is 5 and
	// failed passes are counted; SIGINT (here: the context) ends it with exit 0.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	wctx, cancel = context.WithCancel(ctx)
	go func() {
		code, _, _ := call(wctx, env, "outbox:work", "--poll", "10ms", "--metrics", addr)
		done <- code
	}()
	if !redistest.WaitFor(ctx, 30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "\nelang_outbox_pending 5\n") && !strings.Contains(string(b), "\nelang_outbox_relay_failures_total 0\n")
	}) {
		t.Fatal("outbox:work's /metrics never showed 5 pending rows and a failed pass")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("outbox:work stopped with exit %d, want 0", code)
	}
	// A wrong password is refused without printing either password.
	srv.Restart()
	env["ELANG_REDIS_URL"] = srv.URL("", "wrong-"+password, 0)
	must(1, "outbox:dispatch")
	if strings.Contains(all.String(), password) {
		t.Fatalf("the password reached the output:\n%s", all.String())
	}
}

// write commits events events to channel news and jobs jobs to queue mail.
func write(t *testing.T, pool *pgxpool.Pool, events, jobs int) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for i := 0; i < events; i++ {
		if _, err := (outbox.Events{}).Publish(ctx, tx, "news", []byte("event")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < jobs; i++ {
		if _, err := (outbox.Queue{}).Push(ctx, tx, "mail", []byte("job "+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// Whatever reaches stderr through the command's writer (log records, a job
// program's output) loses the URLs and passwords the command read, however the
// password is spelled in them.
func TestStderrIsRedacted(t *testing.T) {
	var buf bytes.Buffer
	c := &cli{getenv: func(k string) string {
		return map[string]string{"ELANG_REDIS_URL": "redis://app:p%40ss-w0rd-long@db.internal:6380/0"}[k]
	}}
	w := redactingWriter{c: c, w: &buf}
	if _, err := c.secretURL("ELANG_REDIS_URL", "redis"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"dial redis://app:p%40ss-w0rd-long@db.internal:6380/0 failed\n",
		"auth with p@ss-w0rd-long refused\n",
	} {
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if out := buf.String(); strings.Contains(out, "w0rd") || strings.Count(out, "xxxxx") != 2 {
		t.Fatalf("redacted output: %q", out)
	}
}

// Under the aclfile luagen derives for the deployment, elang_app may not load
// scripts: outbox:dispatch fails (exit 1, rows pending) until the scripts are
// loaded, and succeeds with ELANG_REDIS_LOADER_URL naming the loader user, without
// printing either password.
func TestDispatchUnderGeneratedACLNeedsTheLoader(t *testing.T) {
	ctx := context.Background()
	const appPW, loaderPW = "elang-app-cmd-test-password-2a9c", "elang-loader-cmd-test-password-7d31"
	spec, err := keyspec.Load("../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../../lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for user, pw := range map[string]string{"elang_app": appPW, "elang_loader": loaderPW} {
		if hashes[user], err = acl.HashPassword([]byte(pw + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	users, _, err := acl.Derive(spec, spec.Instance("elang"), srcs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, redistest.WithACL(acl.Render(acl.Deploy(users, "acme:production:"))))
	pool := pgtest.Schema(t, 8, outbox.Migration)
	var schema string
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	write(t, pool, 20, 0)
	env := map[string]string{
		"DATABASE_URL":       pgtest.URL + "&search_path=" + schema,
		"ELANG_REDIS_URL":    srv.URL("elang_app", appPW, 0),
		"ELANG_REDIS_PREFIX": "acme:production:",
	}
	code, out, errs := call(ctx, env, "outbox:dispatch")
	if code != 1 || !strings.Contains(errs, "NOPERM") {
		t.Fatalf("dispatch without the loader: exit %d, %q; want 1 and NOPERM", code, errs)
	}
	var pending int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL").Scan(&pending); err != nil || pending != 20 {
		t.Fatalf("pending %d %v, want 20", pending, err)
	}
	all := out + errs
	env["ELANG_REDIS_LOADER_URL"] = srv.URL("elang_loader", loaderPW, 0)
	code, out, errs = call(ctx, env, "outbox:dispatch")
	all += out + errs
	if code != 0 || !strings.Contains(errs, "20 rows relayed (20 appended") {
		t.Fatalf("dispatch with the loader: exit %d, %q", code, errs)
	}
	if strings.Contains(all, appPW) || strings.Contains(all, loaderPW) {
		t.Fatalf("a password reached the output:\n%s", all)
	}
}
