package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/elang/consumer"
	"github.com/hanchat/luagen/services/elang/outbox"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

const usage = `usage: elang <command> [flags]

commands:
  platform:setup       create Elang's service tables (outbox, jobs, event channels, history); idempotent
  outbox:work          relay committed outbox rows into the Redis stream until SIGINT/SIGTERM
  outbox:dispatch      relay every pending outbox row once, then exit
  queue:work           run jobs of --queue with --exec PROGRAM (payload on stdin) until SIGINT/SIGTERM
  operations:prune     remove delivered outbox rows, history and finished jobs past retention

environment:
  DATABASE_URL         postgres://... of the application's database
  ELANG_REDIS_URL      redis://... of the deployment's Redis (database 0), user elang_app
  ELANG_REDIS_LOADER_URL  optional: redis://... as elang_loader, which loads elang's scripts
                       (else the deploy step does: luagen load --instance elang)
  ELANG_REDIS_PREFIX   the deployment prefix (acme:production:); default derived from APP_URL
  APP_URL              the application's URL

Run "elang <command> --help" for a command's flags.
Exit status: 0 success, 1 failure, 2 wrong command line or configuration.
`

// usageError is a wrong command line or configuration: exit 2.
type usageError struct{ msg string }

// Error is the message, printed after the command's name.
func (e usageError) Error() string { return e.msg }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	c := &cli{ctx: ctx, getenv: getenv, stdout: stdout}
	// Everything written to stderr (log records, progress, a job program's output)
	// passes through the redaction of the URLs and passwords the command read.
	c.stderr = redactingWriter{c: c, w: stderr}
	c.log = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var err error
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "platform:setup":
		err = c.setup(rest)
	case "outbox:work":
		err = c.relay(rest, true)
	case "outbox:dispatch":
		err = c.relay(rest, false)
	case "queue:work":
		err = c.queueWork(rest)
	case "operations:prune":
		err = c.prune(rest)
	default:
		fmt.Fprintf(stderr, "elang: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	for _, f := range c.closers {
		_ = f()
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, new(usageError)):
		fmt.Fprintf(c.stderr, "elang %s: %s\n", cmd, err)
		return exitUsage
	default:
		fmt.Fprintf(c.stderr, "elang %s: %s\n", cmd, err)
		return exitFail
	}
}

type cli struct {
	ctx            context.Context
	getenv         func(string) string
	stdout, stderr io.Writer
	log            *slog.Logger
	secrets        []string       // passwords and URLs never printed
	closers        []func() error // closed when the command ends
}

// redactingWriter writes through redact; slog writes a record in one Write.
type redactingWriter struct {
	c *cli
	w io.Writer
}

// Write writes p redacted and reports p's length.
func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, r.c.redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redact removes every URL and password the command read from s.
func (c *cli) redact(s string) string {
	for _, sec := range c.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "xxxxx")
		}
	}
	return s
}

// secretURL reads an URL from the environment and remembers what must never be printed.
func (c *cli) secretURL(env string, schemes ...string) (string, error) {
	raw := c.getenv(env)
	if raw == "" {
		return "", usageError{env + " is not set"}
	}
	u, err := url.Parse(raw)
	if err != nil {
		c.secrets = append(c.secrets, raw)
		return "", usageError{env + " is not a URL"}
	}
	if p, ok := u.User.Password(); ok {
		c.secrets = append(c.secrets, raw, p, url.QueryEscape(p), url.PathEscape(p))
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok {
		return "", usageError{fmt.Sprintf("%s %s: want a URL of scheme %s", env, secrets.RedactURL(raw), strings.Join(schemes, " or "))}
	}
	return raw, nil
}

func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("elang "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	return fs
}

func (c *cli) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}

func (c *cli) db() (*pgxpool.Pool, error) {
	raw, err := c.secretURL("DATABASE_URL", "postgres", "postgresql")
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(c.ctx, raw)
	if err != nil {
		return nil, usageError{"DATABASE_URL " + secrets.RedactURL(raw) + ": " + err.Error()}
	}
	return pool, nil
}

func (c *cli) redis() (*redis.Client, elang.Prefix, *elang.Scripts, error) {
	raw, err := c.secretURL(elang.DB0URLEnv, "redis", "rediss")
	if err != nil {
		return nil, elang.Prefix{}, nil, err
	}
	opt, err := secrets.ParseRedisURL(elang.DB0URLEnv, raw)
	if err != nil {
		return nil, elang.Prefix{}, nil, usageError{err.Error()}
	}
	if opt.DB != elang.DB0 {
		return nil, elang.Prefix{}, nil, usageError{fmt.Sprintf("%s %s names database %d: Elang uses database %d", elang.DB0URLEnv, secrets.RedactURL(raw), opt.DB, elang.DB0)}
	}
	p, err := runtimePrefix(c.getenv)
	if err != nil {
		return nil, elang.Prefix{}, nil, usageError{"deployment prefix: " + err.Error()}
	}
	opt.ContextTimeoutEnabled = true // the relay's and the consumers' per-call bounds apply
	rdb := redis.NewClient(opt)
	// Under luagen's aclfile elang_app runs scripts but may not load them: the
	// deploy step loads them (luagen load --instance elang), or, with the loader
	// user's URL set, the process loads exactly elang's scripts through it
	// (runtime.WithLoader) at start and after a NOSCRIPT.
	if _, set := c.lookup(loaderURLEnv); set {
		lraw, err := c.secretURL(loaderURLEnv, "redis", "rediss")
		if err != nil {
			_ = rdb.Close()
			return nil, elang.Prefix{}, nil, err
		}
		lopt, err := secrets.ParseRedisURL(loaderURLEnv, lraw)
		if err != nil {
			_ = rdb.Close()
			return nil, elang.Prefix{}, nil, usageError{err.Error()}
		}
		loader := redis.NewClient(lopt)
		c.closers = append(c.closers, loader.Close)
		runtime.WithLoader(rdb, loader, elang.AllScripts()...)
		if err := runtime.Preload(c.ctx, rdb, elang.AllScripts()...); err != nil {
			_ = rdb.Close()
			return nil, elang.Prefix{}, nil, fmt.Errorf("load elang's scripts through %s: %w", loaderURLEnv, err)
		}
	}
	scripts, err := elang.NewScripts(elang.Clients{DB0: rdb}, elang.WithPrefix(p))
	if err != nil {
		_ = rdb.Close()
		return nil, elang.Prefix{}, nil, err
	}
	return rdb, p, scripts, nil
}

// loaderURLEnv names the optional URL of the elang_loader user.
const loaderURLEnv = "ELANG_REDIS_LOADER_URL"

// lookup reports an environment variable and whether it is set (not empty).
// stores are the two stores the outbox and queue commands run on: PostgreSQL
// (DATABASE_URL) and the deployment's Redis.
type stores struct {
	db      *pgxpool.Pool
	rdb     *redis.Client
	prefix  elang.Prefix
	scripts *elang.Scripts
}

// stores opens PostgreSQL, then Redis; a failure closes what was opened.
func (c *cli) stores() (*stores, error) {
	db, err := c.db()
	if err != nil {
		return nil, err
	}
	rdb, p, scripts, err := c.redis()
	if err != nil {
		db.Close()
		return nil, err
	}
	return &stores{db: db, rdb: rdb, prefix: p, scripts: scripts}, nil
}

// close closes Redis, then PostgreSQL.
func (s *stores) close() {
	_ = s.rdb.Close()
	s.db.Close()
}

func (c *cli) lookup(env string) (string, bool) {
	v := c.getenv(env)
	return v, v != ""
}

// runtimePrefix is elang.PrefixFromEnv over getenv.
func runtimePrefix(getenv func(string) string) (elang.Prefix, error) {
	if explicit := getenv(elang.PrefixEnv); explicit != "" {
		return elang.NewPrefix(explicit)
	}
	return elang.PrefixFromURL(getenv(elang.PrefixDefaultFrom))
}

func (c *cli) setup(args []string) error {
	fs := c.flags("platform:setup")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	db, err := c.db()
	if err != nil {
		return err
	}
	defer db.Close()
	if err := outbox.Setup(c.ctx, db); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "platform:setup: service tables ready (elang_event_channels, elang_events, elang_jobs, elang_outbox)")
	return nil
}

func (c *cli) relay(args []string, continuous bool) error {
	name := "outbox:dispatch"
	if continuous {
		name = "outbox:work"
	}
	fs := c.flags(name)
	batch := fs.Int("batch", outbox.DefaultBatch, "rows per pass (one SQL transaction, one Redis pipeline), 1..10000")
	poll := fs.Duration("poll", outbox.DefaultPoll, "outbox:work: wait after a pass that found less than a batch")
	metricsAddr := fs.String("metrics", "", "outbox:work: serve Prometheus metrics (elang_outbox_pending, ...) on this address, e.g. 127.0.0.1:9464")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *batch < 1 || *batch > 10000 {
		return usageError{fmt.Sprintf("--batch %d: want 1..10000", *batch)}
	}
	st, err := c.stores()
	if err != nil {
		return err
	}
	defer st.close()
	db, rdb, p, scripts := st.db, st.rdb, st.prefix, st.scripts
	reg := prometheus.NewRegistry()
	r := outbox.NewRelay(db, rdb, scripts, p, outbox.Options{Batch: *batch, Poll: *poll, Logger: c.log, Registerer: reg})
	if continuous {
		stop, err := c.serveMetrics(*metricsAddr, reg)
		if err != nil {
			return err
		}
		defer stop()
		c.log.Info("outbox:work: relaying", "prefix", p.String(), "batch", *batch)
		return r.Work(c.ctx)
	}
	pr := c.progress(name)
	total, err := r.Drain(c.ctx, func(t outbox.Pass) {
		pr(false, "%d rows relayed (%d appended, %d already in the stream)", t.Appended+t.Deduplicated, t.Appended, t.Deduplicated)
	})
	pr(true, "%d rows relayed (%d appended, %d already in the stream), %d failed", total.Appended+total.Deduplicated, total.Appended, total.Deduplicated, total.Failed)
	return err
}

// progress prints a progress line to stderr at most once a second, and the final
// line always.
func (c *cli) progress(name string) func(final bool, format string, a ...any) {
	var last time.Time
	return func(final bool, format string, a ...any) {
		if !final && time.Since(last) < time.Second {
			return
		}
		last = time.Now()
		fmt.Fprintf(c.stderr, "%s: %s\n", name, fmt.Sprintf(format, a...))
	}
}

func (c *cli) prune(args []string) error {
	fs := c.flags("operations:prune")
	delivered := fs.Duration("delivered", 7*24*time.Hour, "keep delivered outbox rows this long")
	history := fs.Duration("history", 7*24*time.Hour, "keep realtime history this long (align it with how long clients may stay away)")
	jobs := fs.Duration("jobs", 7*24*time.Hour, "keep finished jobs this long")
	batch := fs.Int("batch", 1000, "rows per DELETE")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *delivered <= 0 || *history <= 0 || *jobs <= 0 || *batch < 1 {
		return usageError{"retention and --batch must be positive"}
	}
	db, err := c.db()
	if err != nil {
		return err
	}
	defer db.Close()
	pr := c.progress("operations:prune")
	got, err := outbox.Prune(c.ctx, db, outbox.Retention{Delivered: *delivered, History: *history, Jobs: *jobs, Batch: *batch}, func(p outbox.Pruned) {
		pr(false, "removed %d outbox rows, %d events, %d jobs so far", p.Outbox, p.Events, p.Jobs)
	})
	pr(true, "removed %d outbox rows, %d events, %d jobs", got.Outbox, got.Events, got.Jobs)
	return err
}

func (c *cli) queueWork(args []string) error {
	fs := c.flags("queue:work")
	queues := fs.String("queue", "", "comma-separated queues to run (required)")
	program := fs.String("exec", "", "program run per job: payload on stdin, ELANG_JOB_ID, ELANG_JOB_QUEUE, ELANG_JOB_ATTEMPT in its environment; exit 0 = done (required)")
	group := fs.String("group", "queue", "consumer group shared by the workers")
	consumerName := fs.String("consumer", "", "this worker's name in the group (default: host and pid)")
	batch := fs.Int("batch", 10, "notifications and jobs per step")
	lease := fs.Duration("lease", 30*time.Second, "how long a claimed job is this worker's; the program is killed after it")
	relay := fs.Bool("relay", false, "also relay outbox rows before each wait")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics (elang_queue_jobs_total, ...) on this address, e.g. 127.0.0.1:9465")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *queues == "" || *program == "" {
		return usageError{"--queue and --exec are required"}
	}
	qs := strings.Split(*queues, ",")
	for _, q := range qs {
		if err := outbox.CheckName("queue", q); err != nil {
			return usageError{err.Error()}
		}
	}
	if *consumerName == "" {
		*consumerName = defaultConsumer()
	}
	st, err := c.stores()
	if err != nil {
		return err
	}
	defer st.close()
	db, rdb, p, scripts := st.db, st.rdb, st.prefix, st.scripts
	g, err := consumer.NewGroup(rdb, p, *group, *consumerName)
	if err != nil {
		return usageError{err.Error()}
	}
	reg := prometheus.NewRegistry()
	o := consumer.WorkerOptions{Queues: qs, Batch: *batch, Lease: *lease, Logger: c.log, Registerer: reg}
	if *relay {
		o.Relay = outbox.NewRelay(db, rdb, scripts, p, outbox.Options{Logger: c.log, Registerer: reg})
	}
	stop, err := c.serveMetrics(*metricsAddr, reg)
	if err != nil {
		return err
	}
	defer stop()
	extra := fs.Args()
	h := func(ctx context.Context, j consumer.Job) error {
		// SIGINT/SIGTERM let a running program finish (within its lease): the
		// worker then records it and stops.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *lease)
		defer cancel()
		cmd := exec.CommandContext(ctx, *program, extra...)
		cmd.Stdin = strings.NewReader(string(j.Payload))
		cmd.Stdout, cmd.Stderr = c.stderr, c.stderr
		cmd.Env = append(cmd.Environ(), fmt.Sprintf("ELANG_JOB_ID=%d", j.ID), "ELANG_JOB_QUEUE="+j.Queue, fmt.Sprintf("ELANG_JOB_ATTEMPT=%d", j.Attempt))
		return cmd.Run()
	}
	c.log.Info("queue:work: running", "queues", *queues, "group", *group, "consumer", *consumerName)
	return consumer.NewWorker(db, g, h, o).Work(c.ctx)
}

// serveMetrics serves reg on addr (/metrics) until stop is called; an empty addr
// serves nothing.
func (c *cli) serveMetrics(addr string, reg *prometheus.Registry) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageError{"--metrics " + addr + ": " + err.Error()}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	c.log.Info("metrics served", "addr", l.Addr().String())
	return func() { _ = srv.Close() }, nil
}
