package tests

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/logtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/vm1/coord"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/hanchat/luagen/services/vm1/jwks"
	"github.com/hanchat/luagen/services/vm1/presence"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/hanchat/luagen/services/vm1/settings"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// adminDB is a client of db as the test's admin user (SCAN, PTTL, INFO, SAVE).
func (a *aclInstance) adminDB(db int) *redis.Client { return a.srv.Client(db, admin) }

// userClientWith is userClient with options changed (timeouts, another address
// such as a proxy's).
func (a *aclInstance) userClientWith(t *testing.T, user string, db int, f func(*redis.Options)) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(a.srv.URL(user, aclPasswords[user], db))
	if err != nil {
		t.Fatal(err)
	}
	f(opts)
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return a.withLoader(t, c)
}

// infoField is one field of INFO section (e.g. "stats", "evicted_keys").
func infoField(t *testing.T, c *redis.Client, section, field string) string {
	t.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return ""
}

func infoInt(t *testing.T, c *redis.Client, section, field string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(infoField(t, c, section, field), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// keyState is one key as a restart must keep it: its type, its content in a
// canonical form, and its remaining TTL when it was read.
type keyState struct {
	Type  string
	Value string
	PTTL  time.Duration
}

// keyspaceOf reads every key of c's database.
func keyspaceOf(t *testing.T, c *redis.Client) map[string]keyState {
	t.Helper()
	ctx := context.Background()
	keys := map[string]keyState{}
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		typ := c.Type(ctx, k).Val()
		var v string
		switch typ {
		case "string":
			v = c.Get(ctx, k).Val()
		case "hash":
			m := c.HGetAll(ctx, k).Val()
			fields := make([]string, 0, len(m))
			for f, fv := range m {
				fields = append(fields, strconv.Quote(f)+"="+strconv.Quote(fv))
			}
			sort.Strings(fields)
			v = strings.Join(fields, ",")
		case "zset":
			for _, z := range c.ZRangeWithScores(ctx, k, 0, -1).Val() {
				v += fmt.Sprintf("%q=%v,", z.Member, z.Score)
			}
		default:
			t.Errorf("key %s of unexpected type %s", k, typ)
		}
		keys[k] = keyState{Type: typ, Value: v, PTTL: c.PTTL(ctx, k).Val()}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// compareAfterRestart fails the test unless after holds every key of before
// with the same type and content, and a TTL that went on running: not reset
// upward, and not shorter than what the time between the reads allows.
func compareAfterRestart(t *testing.T, db string, before, after map[string]keyState, elapsed time.Duration) {
	t.Helper()
	if len(before) == 0 {
		t.Fatalf("%s: nothing was written before the restart", db)
	}
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			t.Errorf("%s: %s is gone after the restart", db, k)
		case a.Type != b.Type || a.Value != b.Value:
			t.Errorf("%s: %s changed over the restart: %s %s, was %s %s", db, k, a.Type, a.Value, b.Type, b.Value)
		case a.PTTL <= 0:
			t.Errorf("%s: %s has no TTL after the restart (%v)", db, k, a.PTTL)
		case a.PTTL > b.PTTL:
			t.Errorf("%s: %s: TTL %v after the restart, %v before: reset upward", db, k, a.PTTL, b.PTTL)
		case a.PTTL < b.PTTL-elapsed-time.Second:
			t.Errorf("%s: %s: TTL %v after the restart, %v before, %v apart: lost more than the time that passed", db, k, a.PTTL, b.PTTL, elapsed)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared over the restart", db, k)
		}
	}
}

// aofCommand is one command of an AOF file and where it lies in the file.
type aofCommand struct {
	Start, End int64 // [Start, End)
	Args       []string
}

// aofUnit is what Redis applies at once when it loads an AOF: one command, or
// a MULTI ... EXEC block (a script's writes are propagated as one).
type aofUnit struct {
	Start, End int64
	Commands   []aofCommand // MULTI and EXEC included
}

// mentions reports whether a command of the unit names s.
func (u aofUnit) mentions(s string) bool {
	for _, c := range u.Commands {
		for _, a := range c.Args {
			if a == s {
				return true
			}
		}
	}
	return false
}

func (u aofUnit) isMulti() bool {
	return len(u.Commands) > 0 && strings.EqualFold(u.Commands[0].Args[0], "multi")
}

// parseAOF reads an AOF (RESP arrays of bulk strings) into units. It fails on
// anything else, and on a file that ends inside a command or a MULTI block.
func parseAOF(b []byte) ([]aofUnit, error) {
	var units []aofUnit
	var open *aofUnit
	pos := 0
	line := func() (string, error) {
		i := bytes.Index(b[pos:], []byte("\r\n"))
		if i < 0 {
			return "", fmt.Errorf("offset %d: no line end", pos)
		}
		s := string(b[pos : pos+i])
		pos += i + 2
		return s, nil
	}
	for pos < len(b) {
		start := pos
		h, err := line()
		if err != nil {
			return nil, err
		}
		if len(h) < 2 || h[0] != '*' {
			return nil, fmt.Errorf("offset %d: %q is not an array header", start, h)
		}
		n, err := strconv.Atoi(h[1:])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("offset %d: bad array length %q", start, h)
		}
		cmd := aofCommand{Start: int64(start)}
		for i := 0; i < n; i++ {
			bh, err := line()
			if err != nil {
				return nil, err
			}
			if len(bh) < 2 || bh[0] != '$' {
				return nil, fmt.Errorf("offset %d: %q is not a bulk header", pos, bh)
			}
			l, err := strconv.Atoi(bh[1:])
			if err != nil || l < 0 || pos+l+2 > len(b) {
				return nil, fmt.Errorf("offset %d: bad or short bulk %q", pos, bh)
			}
			cmd.Args = append(cmd.Args, string(b[pos:pos+l]))
			pos += l + 2
		}
		cmd.End = int64(pos)
		name := strings.ToLower(cmd.Args[0])
		switch {
		case open != nil:
			open.Commands = append(open.Commands, cmd)
			if name == "exec" {
				open.End = cmd.End
				units = append(units, *open)
				open = nil
			}
		case name == "multi":
			open = &aofUnit{Start: cmd.Start, Commands: []aofCommand{cmd}}
		default:
			units = append(units, aofUnit{Start: cmd.Start, End: cmd.End, Commands: []aofCommand{cmd}})
		}
	}
	if open != nil {
		return units, fmt.Errorf("offset %d: MULTI without EXEC", open.Start)
	}
	return units, nil
}

// incrAOF is the path of the active incremental AOF of a server's directory,
// read from the Redis 7 manifest (appendonlydir/appendonly.aof.manifest).
func incrAOF(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest"))
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// file <name> seq <n> type <b|h|i>
		if len(f) == 6 && f[0] == "file" && f[4] == "type" && f[5] == "i" {
			last = f[1]
		}
	}
	if last == "" {
		t.Fatalf("no incremental file in the manifest:\n%s", b)
	}
	return filepath.Join(dir, "appendonlydir", last)
}

// copyDir copies the regular files of src into dst (created), as an operator's
// backup of appendonlydir/ before a repair.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// faultProxy is a TCP proxy between clients and one redis-server with the
// switches of a bad network: latency added to every chunk each way, a black
// hole (bytes vanish, nothing answers, the connections stay open), refusal of
// new connections, and dropping every open connection.
type faultProxy struct {
	ln     net.Listener
	target string
	done   chan struct{}

	latency   atomic.Int64 // time.Duration added before each chunk is passed on
	blackhole atomic.Bool
	refuse    atomic.Bool
	accepted  atomic.Int64
	inFlight  atomic.Int64 // chunks read and not yet passed on

	mu    sync.Mutex
	conns map[*proxyConn]struct{}
	wg    sync.WaitGroup
}

// proxyConn is a client connection and, unless it was taken while the proxy
// was a black hole, its connection to the server.
type proxyConn struct {
	client, server net.Conn
	// dead: bytes of this connection vanished, so its stream is broken for good,
	// as a TCP connection whose packets were lost stays broken after a partition.
	dead atomic.Bool
}

func (c *proxyConn) close() {
	_ = c.client.Close()
	if c.server != nil {
		_ = c.server.Close()
	}
}

// startProxy starts a proxy to target on a free loopback port; it is closed,
// with every connection it holds, when the test ends.
func startProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, done: make(chan struct{}), conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

// setLatency adds d to every chunk, each way (0: none).
func (p *faultProxy) setLatency(d time.Duration) { p.latency.Store(int64(d)) }

// setBlackhole makes bytes vanish (on) or pass again (off). A connection that
// lost bytes stays broken; one that was idle meanwhile works on.
func (p *faultProxy) setBlackhole(on bool) { p.blackhole.Store(on) }

// setRefuse closes every new connection at once (on), as a host whose server is
// down does.
func (p *faultProxy) setRefuse(on bool) { p.refuse.Store(on) }

// dropAll closes every open connection, both ways.
func (p *faultProxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.close()
		delete(p.conns, c)
	}
}

func (p *faultProxy) close() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	_ = p.ln.Close()
	p.dropAll()
	p.wg.Wait()
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		if p.refuse.Load() {
			_ = client.Close()
			continue
		}
		c := &proxyConn{client: client}
		if p.blackhole.Load() {
			c.dead.Store(true) // nothing reaches the server
		} else if c.server, err = net.DialTimeout("tcp", p.target, time.Second); err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		select {
		case <-p.done:
			p.mu.Unlock()
			c.close()
			return
		default:
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.pipe(c, c.client, c.server)
		if c.server != nil {
			p.wg.Add(1)
			go p.pipe(c, c.server, c.client)
		}
	}
}

// pipe passes what src sends on to dst (nil: nowhere) until either side closes,
// then closes both.
func (p *faultProxy) pipe(c *proxyConn, src, dst net.Conn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if dst == nil || c.dead.Load() || p.blackhole.Load() {
				c.dead.Store(true)
			} else {
				p.inFlight.Add(1)
				if d := time.Duration(p.latency.Load()); d > 0 {
					// The point is to let time pass: this is the network's delay.
					timer := time.NewTimer(d)
					select {
					case <-timer.C:
					case <-p.done:
						timer.Stop()
						p.inFlight.Add(-1)
						return
					}
				}
				_, werr := dst.Write(buf[:n])
				p.inFlight.Add(-1)
				if werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// errorLog collects every error a workload returned, to check what callers
// (and so logs and HTTP answers) would see.
type errorLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *errorLog) add(err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	l.errs = append(l.errs, err.Error())
	l.mu.Unlock()
}

func (l *errorLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.errs, "\n")
}

func (l *errorLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs)
}

// within runs f and fails the test when it takes longer than bound: a
// generous limit that only a call stuck past its deadline exceeds, never a
// speed claim.
func within(t *testing.T, bound time.Duration, what string, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	f()
	took := time.Since(start)
	if took > bound {
		t.Errorf("%s took %v, more than %v", what, took, bound)
	}
	return took
}

// resilienceSettings is the settings snapshot type of these tests.
type resilienceSettings struct {
	Rules   []string
	Limit   int64
	Enabled bool
}

// vm1Stack is every VM1 package on one redis-server, as api-backend wires
// them: api_backend's clients of DB0 and DB1 under the generated ACL, and
// PostgreSQL for idempotency.
type vm1Stack struct {
	a        *aclInstance
	db0, db1 *redis.Client // api_backend's
	scripts  *vm1.Scripts
	limiter  *ratelimit.Limiter
	keeper   *idempotency.Keeper
	pool     *pgxpool.Pool
	presence *presence.Presence
	locker   *coord.Locker
	settings *settings.Store[resilienceSettings]
	jwks     *jwks.NegativeCache
	reg      *prometheus.Registry
}

// newVM1Stack builds the packages on a's server with api_backend clients that
// opts may change (nil: as parsed from the URL), and the rate-limit policy p.
func newVM1Stack(t *testing.T, a *aclInstance, opts func(*redis.Options), p ratelimit.Policy) *vm1Stack {
	t.Helper()
	if opts == nil {
		opts = func(*redis.Options) {}
	}
	s := &vm1Stack{a: a, reg: prometheus.NewRegistry()}
	s.db0 = a.userClientWith(t, "api_backend", vm1.DB0, opts)
	s.db1 = a.userClientWith(t, "api_backend", vm1.DB1, opts)
	var err error
	if s.scripts, err = vm1.NewScripts(vm1.Clients{DB0: s.db0, DB1: s.db1}); err != nil {
		t.Fatal(err)
	}
	if s.limiter, err = ratelimit.New(s.scripts, p, ratelimit.Options{IPKey: testHMACKey, Registerer: s.reg}); err != nil {
		t.Fatal(err)
	}
	s.pool = idemtest.Postgres(t)
	if s.keeper, err = idempotency.New(s.scripts, idempotency.NewStore(s.pool), testHMACKey, idempotency.Options{Registerer: s.reg}); err != nil {
		t.Fatal(err)
	}
	if s.presence, err = presence.New(s.scripts, "api-1"); err != nil {
		t.Fatal(err)
	}
	s.locker = coord.New(s.scripts)
	s.settings = settings.New[resilienceSettings](s.scripts)
	s.jwks = jwks.New(s.scripts)
	return s
}

// sideEffects counts the committed side effects of the idempotency key.
func (s *vm1Stack) sideEffects(t *testing.T, key string) int {
	t.Helper()
	return idemtest.SideEffects(t, s.pool, key)
}

// letTimePass waits until Redis's clock is d past its reading now, so that a
// TTL reset upward by a restart would show. The point is to let time pass.
func letTimePass(t *testing.T, c *redis.Client, d time.Duration) {
	t.Helper()
	until := scripttest.RedisNow(t, c).Add(d)
	if !redistest.WaitFor(context.Background(), d+10*time.Second, func() bool { return !scripttest.RedisNow(t, c).Before(until) }) {
		t.Fatalf("Redis's clock did not pass %v", d)
	}
}

// logMark is where a server's log ends now; logSince reads what came after.
func logMark(srv *redistest.Server) int { return len(srv.Log()) }

func logSince(srv *redistest.Server, mark int) string {
	l := srv.Log()
	if mark > len(l) {
		return l
	}
	return l[mark:]
}

// checkCleanLoad fails the test when the server's log since mark reports an
// error while it loaded its data (e.g. a command of the AOF it refused).
func checkCleanLoad(t *testing.T, srv *redistest.Server, mark int) {
	t.Helper()
	for _, line := range strings.Split(logSince(srv, mark), "\n") {
		if strings.Contains(line, "CRITICAL") || strings.Contains(line, "NOPERM") {
			t.Errorf("the load reported: %s", line)
		}
	}
}

// rtCreated is the DTO of these tests' realtime contract: ids and counters only.
type rtCreated struct {
	Seq int64 `msgpack:"s"`
}

// rtApp stands for a realtime gateway: db is the source of truth (PostgreSQL
// in production), applied what its client state holds; events reach it by
// delivery and by reconciliation, which reads db.
type rtApp struct {
	mu        sync.Mutex
	db        []string
	applied   map[string]bool
	delivered []string
	gaps      []pubsub.Gap
}

func (a *rtApp) reconcile(_ context.Context, g pubsub.Gap) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range a.db {
		a.applied[id] = true
	}
	a.gaps = append(a.gaps, g)
	return nil
}

// rtRig is a Subscriber of one dialog channel on its own client, its app, and
// a Publisher on another client.
type rtRig struct {
	app  *rtApp
	sub  *pubsub.Subscriber
	pub  *pubsub.Publisher
	ch   pubsub.Channel
	logs *logtest.Recorder // what the Subscriber logged
}

// lostMsg is what the Subscriber logs when a connection ends.
const lostMsg = "pubsub: connection lost; reconnecting"

// lost is when each connection was reported lost.
func (r *rtRig) lost() []time.Time {
	var at []time.Time
	for _, rec := range r.logs.Records(lostMsg) {
		at = append(at, rec.Time)
	}
	return at
}

// startRTRig runs a Subscriber of one new dialog channel on subClient (its
// Logger is the rig's) and publishes through pubClient. It is stopped when the
// test ends.
func startRTRig(t *testing.T, subClient, pubClient *redis.Client, o pubsub.Options) *rtRig {
	t.Helper()
	contract, err := pubsub.NewContract(pubsub.Allow[rtCreated]("message.created"))
	if err != nil {
		t.Fatal(err)
	}
	r := &rtRig{app: &rtApp{applied: map[string]bool{}}}
	if r.ch, err = pubsub.Dialog(uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	r.pub = pubsub.NewPublisher(pubClient, contract)
	o.Logger, r.logs = logtest.New()
	o.Channels = []pubsub.Channel{r.ch}
	if r.sub, err = pubsub.NewSubscriber(subClient, contract, r.app.reconcile, o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	consumed := make(chan struct{})
	go func() { _ = r.sub.Run(ctx); close(ran) }()
	go func() {
		defer close(consumed)
		for d := range r.sub.Events() {
			r.app.mu.Lock()
			r.app.applied[d.Event.ID] = true
			r.app.delivered = append(r.app.delivered, d.Event.ID)
			r.app.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-ran; <-consumed })
	return r
}

// publish records an event in the app's source of truth, then publishes it
// (as an outbox relay does) and returns its id.
func (r *rtRig) publish(t *testing.T, seq int64) string {
	t.Helper()
	ev := pubsub.Event{ID: uuid.NewString(), Type: "message.created", Entity: uuid.NewString(), DTO: rtCreated{Seq: seq}}
	r.app.mu.Lock()
	r.app.db = append(r.app.db, ev.ID)
	r.app.mu.Unlock()
	if _, err := r.pub.Publish(context.Background(), r.ch, ev); err != nil {
		t.Fatal(err)
	}
	return ev.ID
}

// waitFor waits until cond holds on the app's state, and fails the test after
// 10 s.
func (r *rtRig) waitFor(t *testing.T, what string, cond func(a *rtApp) bool) {
	t.Helper()
	if !redistest.WaitFor(context.Background(), 10*time.Second, func() bool {
		r.app.mu.Lock()
		defer r.app.mu.Unlock()
		return cond(r.app)
	}) {
		r.app.mu.Lock()
		defer r.app.mu.Unlock()
		t.Fatalf("%s: gaps %+v, delivered %d, lost %d, stats %+v", what, r.app.gaps, len(r.app.delivered), len(r.lost()), r.sub.Stats())
	}
}

// lastGapIs reports whether the latest reconciliation had reason.
func lastGapIs(reason pubsub.GapReason) func(a *rtApp) bool {
	return func(a *rtApp) bool { return len(a.gaps) > 0 && a.gaps[len(a.gaps)-1].Reason == reason }
}

// hasApplied reports whether every id reached the app's state.
func hasApplied(ids ...string) func(a *rtApp) bool {
	return func(a *rtApp) bool {
		for _, id := range ids {
			if !a.applied[id] {
				return false
			}
		}
		return true
	}
}

// wasDelivered reports whether id came through Pub/Sub (not reconciliation).
func wasDelivered(id string) func(a *rtApp) bool {
	return func(a *rtApp) bool { return slices.Contains(a.delivered, id) }
}
