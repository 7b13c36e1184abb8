package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/examples/cacheservice/internal/redisgen/sessions"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/failover"
	"github.com/redis/go-redis/v9"
)

// The cluster tests' load: 50 callers, each calling login_attempt in a loop on
// the test's accounts (spread over every primary), each call with a fresh
// attempt id and its own deadline.
const (
	loadCallers  = 50
	callTimeout  = 2 * time.Second
	attemptLimit = 100000 // never reached: every acknowledged attempt is counted
	attemptSpan  = time.Hour
	// nodeTimeout is the cluster's cluster-node-timeout: how long a killed primary
	// goes unnoticed.
	nodeTimeout = 2 * time.Second
)

// The sessions instance on a 3-primary, 3-replica cluster under a steady load
// of 50 callers, through three events in turn: a live resharding of the slots
// the test's keys live on, a manual failover, and a primary killed with SIGKILL.
// In each, every call of every caller is accounted for: the attempts the server
// holds are exactly the acknowledged ones plus those of calls whose outcome the
// caller could not know, looked up one by one; errors are typed (Unavailable)
// and confined to a window the test prints and bounds. It runs once per
// backend (go-redis, rueidis), each on a cluster of its own, with the same
// assertions and bounds.
func TestClusterUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node cluster and runs it under load")
	}
	quietRedisLog(t)
	for _, b := range backends {
		// Each backend gets a cluster of its own: the last event kills a primary.
		t.Run(b.name, func(t *testing.T) {
			start := time.Now()
			cluster := redistest.StartClusterWith(t, redistest.ClusterConfig{Primaries: 3, Replicas: 1, NodeTimeout: nodeTimeout})
			t.Logf("cluster of 3 primaries and 3 replicas up in %s", time.Since(start).Round(time.Millisecond))
			prefix := sessionsTestPrefix(t)
			t.Run("resharding", func(t *testing.T) { testResharding(t, b, cluster, prefix) })
			t.Run("manual failover", func(t *testing.T) { testManualFailover(t, b, cluster, prefix) })
			t.Run("primary killed", func(t *testing.T) { testPrimaryKilled(t, b, cluster, prefix) })
		})
	}
}

// quietRedisLog keeps go-redis's pool from logging every refused dial while a
// node is down; the test counts the errors callers see instead.
func quietRedisLog(t *testing.T) {
	redis.SetLogger(discardLog{})
	t.Cleanup(func() { redis.SetLogger(stderrLog{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)}) })
}

type discardLog struct{}

func (discardLog) Printf(context.Context, string, ...any) {}

type stderrLog struct{ l *log.Logger }

func (s stderrLog) Printf(_ context.Context, format string, v ...any) {
	_ = s.l.Output(2, fmt.Sprintf(format, v...))
}

// clusterClient is a go-redis ClusterClient whose calls end by their context's
// deadline, however the cluster behaves, and which follows failovers
// (failover.Follow).
func clusterClient(t *testing.T, cluster *redistest.Cluster) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 cluster.Addrs(),
		MaxRedirects:          8,
		DialTimeout:           500 * time.Millisecond,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		ContextTimeoutEnabled: true,
		PoolSize:              loadCallers + 10,
	})
	t.Cleanup(func() { _ = cc.Close() })
	failover.Follow(cc)
	return cc
}

// preload loads the scripts on every node through the backend and checks the
// report covers the three primaries and every running replica.
func preload(t *testing.T, ctx context.Context, cluster *redistest.Cluster, s target) {
	t.Helper()
	report, err := s.preload(ctx)
	if err != nil {
		t.Fatalf("preload: %v\n%s", err, report)
	}
	running := 0
	for _, s := range cluster.Nodes {
		if s.Running() {
			running++
		}
	}
	roles := map[string]int{}
	for _, n := range report.Nodes {
		roles[n.Role]++
		if len(n.Loaded) != len(sessions.AllScripts()) {
			t.Fatalf("%s %s loaded %v", n.Role, n.Addr, n.Loaded)
		}
	}
	if roles[runtime.RolePrimary] != 3 || roles[runtime.RolePrimary]+roles[runtime.RoleReplica] != running {
		t.Fatalf("preload reached %v of %d running nodes:\n%s", roles, running, report)
	}
	t.Logf("preload:\n%s", report)
}

// accounts picks login_attempts keys until every primary serves at least two.
func accounts(t *testing.T, ctx context.Context, cluster *redistest.Cluster, cc *redis.ClusterClient, p sessions.Prefix, tag string) []loginAccount {
	t.Helper()
	var keys []loginAccount
	per := map[*redistest.Server]int{}
	for i := 0; len(per) < 3 || minCount(per) < 2; i++ {
		if i > 200 {
			t.Fatalf("200 accounts did not cover three primaries: %v", per)
		}
		id := fmt.Sprintf("%s-%d", tag, i)
		k, err := sessions.NewLoginAttemptsKey(p, id)
		if err != nil {
			t.Fatal(err)
		}
		owner, err := cluster.PrimaryOf(ctx, slotOf(t, ctx, cc, k.String()))
		if err != nil {
			t.Fatal(err)
		}
		if per[owner] >= 2 {
			continue
		}
		per[owner]++
		keys = append(keys, loginAccount{id: id, key: k.String()})
	}
	return keys
}

func minCount(m map[*redistest.Server]int) int {
	least := -1
	for _, n := range m {
		if least < 0 || n < least {
			least = n
		}
	}
	return least
}

func slotOf(t *testing.T, ctx context.Context, cc *redis.ClusterClient, key string) int {
	t.Helper()
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return int(slot)
}

// attemptCall is one finished call of the load.
type attemptCall struct {
	attempt    string
	account    int
	start, end time.Time
	res        attemptResult
	err        error
}

// load runs the callers until stop.
type load struct {
	s        target
	accounts []loginAccount
	stop     chan struct{}
	wg       sync.WaitGroup
	ok       []atomic.Int64 // acknowledged calls per caller
	okOf     []atomic.Int64 // acknowledged calls per account
	calls    [][]attemptCall
	run      string
}

func startLoad(s target, accounts []loginAccount) *load {
	l := &load{s: s, accounts: accounts, stop: make(chan struct{}), ok: make([]atomic.Int64, loadCallers), okOf: make([]atomic.Int64, len(accounts)),
		calls: make([][]attemptCall, loadCallers), run: strings.ReplaceAll(uuid.NewString(), "-", "")[:12]}
	for i := 0; i < loadCallers; i++ {
		l.wg.Add(1)
		go l.caller(i)
	}
	return l
}

func (l *load) caller(i int) {
	defer l.wg.Done()
	for n := 0; ; n++ {
		select {
		case <-l.stop:
			return
		default:
		}
		c := attemptCall{attempt: fmt.Sprintf("%s-%02d-%07d", l.run, i, n), account: (i + n) % len(l.accounts), start: time.Now()}
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		c.res, c.err = l.s.loginAttempt(ctx, l.accounts[c.account].id, c.attempt)
		cancel()
		c.end = time.Now()
		l.calls[i] = append(l.calls[i], c)
		if c.err == nil {
			l.ok[i].Add(1)
			l.okOf[c.account].Add(1)
		} else {
			// A failing caller backs off a little, as a service would.
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// progress is how many calls each caller, and each account, has had
// acknowledged so far.
type progress struct{ callers, accounts []int64 }

func (l *load) acked() progress {
	p := progress{make([]int64, len(l.ok)), make([]int64, len(l.okOf))}
	for i := range l.ok {
		p.callers[i] = l.ok[i].Load()
	}
	for i := range l.okOf {
		p.accounts[i] = l.okOf[i].Load()
	}
	return p
}

// waitProgress waits until every caller and every account (so every slot the
// test uses) has n more acknowledged calls than at mark: the whole load is
// being served.
func (l *load) waitProgress(t *testing.T, mark progress, n int64, timeout time.Duration) {
	t.Helper()
	ok := redistest.WaitFor(context.Background(), timeout, func() bool {
		now := l.acked()
		for i := range now.callers {
			if now.callers[i] < mark.callers[i]+n {
				return false
			}
		}
		for i := range now.accounts {
			if now.accounts[i] < mark.accounts[i]+n {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("within %s not every caller and account had %d more calls acknowledged: %v, from %v", timeout, n, l.acked(), mark)
	}
}

// finish stops the callers and returns every call they made.
func (l *load) finish() []attemptCall {
	close(l.stop)
	l.wg.Wait()
	var all []attemptCall
	for _, c := range l.calls {
		all = append(all, c...)
	}
	return all
}

// errorWindow checks every failed call: its error is typed (Unavailable: the
// cluster could not serve it), it ended after event and its call took no
// longer than its deadline allows; and it prints the window from the first
// failed call's start to the last one's end, with counts by kind.
func errorWindow(t *testing.T, calls []attemptCall, event time.Time, bound time.Duration) (window time.Duration, failed int) {
	t.Helper()
	var first, last time.Time
	kinds := map[string]int{}
	var slowest time.Duration
	for _, c := range calls {
		if d := c.end.Sub(c.start); d > slowest {
			slowest = d
		}
		if c.err == nil {
			continue
		}
		failed++
		kinds[errKind(c.err)]++
		if !degraded.Unavailable(c.err) {
			t.Errorf("attempt %s: an error that is not Unavailable: %v", c.attempt, c.err)
		}
		if c.end.Before(event) {
			t.Errorf("attempt %s failed before the event: %v", c.attempt, c.err)
		}
		if first.IsZero() || c.start.Before(first) {
			first = c.start
		}
		if c.end.After(last) {
			last = c.end
		}
	}
	// A call returns at its deadline; a loaded machine may take a moment more to run it.
	if slowest > callTimeout+2*time.Second {
		t.Errorf("a call took %s; every call ends by its %s deadline", slowest, callTimeout)
	}
	if failed > 0 {
		window = last.Sub(first)
	}
	var kv []string
	for k, n := range kinds {
		kv = append(kv, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kv)
	if failed == 0 {
		t.Logf("no call of %d failed; slowest call %s", len(calls), slowest.Round(time.Millisecond))
	} else {
		t.Logf("error window %s, from %s to %s after the event: %d of %d calls failed {%s}; slowest call %s",
			window.Round(time.Millisecond), first.Sub(event).Round(time.Millisecond), last.Sub(event).Round(time.Millisecond),
			failed, len(calls), strings.Join(kv, " "), slowest.Round(time.Millisecond))
	}
	if window > bound {
		t.Errorf("error window %s is above its bound %s", window, bound)
	}
	return window, failed
}

// errKind names what went wrong, for the counts the test prints.
func errKind(err error) string {
	var se *runtime.ScriptError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return se.Code
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "other"
}

// account checks the server's attempts against the calls: every acknowledged
// attempt is there once, no refused one is, every attempt there is one of the
// calls, and the count is the acknowledged attempts plus exactly those of the
// calls whose outcome was unknown that the server holds.
func account(t *testing.T, ctx context.Context, cc *redis.ClusterClient, keys []loginAccount, calls []attemptCall) {
	t.Helper()
	held := map[string]bool{}
	for _, k := range keys {
		members, err := cc.ZRange(ctx, k.key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			held[m] = true
		}
	}
	var acked, duplicates, denied, unknown, unknownHeld int
	for _, c := range calls {
		switch {
		case c.err == nil && c.res.Allowed:
			acked++
			if c.res.Duplicate {
				duplicates++
			}
			if !held[c.attempt] {
				t.Errorf("acknowledged attempt %s is not on the server", c.attempt)
			}
		case c.err == nil:
			denied++
			if held[c.attempt] {
				t.Errorf("refused attempt %s is on the server", c.attempt)
			}
		default:
			unknown++
			if held[c.attempt] {
				unknownHeld++
			}
		}
	}
	if len(held) != acked+unknownHeld {
		t.Errorf("the server holds %d attempts; %d acknowledged + %d of unknown outcome found there = %d",
			len(held), acked, unknownHeld, acked+unknownHeld)
	}
	if denied != 0 {
		t.Errorf("%d attempts refused under a limit of %d", denied, attemptLimit)
	}
	t.Logf("counts: server %d = acknowledged %d (%d answered as resent duplicates) + %d of %d calls of unknown outcome",
		len(held), acked, duplicates, unknownHeld, unknown)
}

// testResharding moves every slot the test's keys live on from one primary to
// another, key by key, under load: calls follow ASK while a slot migrates and
// MOVED after; no call fails, none is lost, none is applied twice (session
// versions count every acknowledged save exactly).
func testResharding(t *testing.T, b backend, cluster *redistest.Cluster, p sessions.Prefix) {
	ctx := context.Background()
	cc := clusterClient(t, cluster)
	s := b.connect(t, ctx, cluster, cc, p)
	preload(t, ctx, cluster, s)
	keys := accounts(t, ctx, cluster, cc, p, "reshard")
	from, err := cluster.PrimaryOf(ctx, slotOf(t, ctx, cc, keys[0].key))
	if err != nil {
		t.Fatal(err)
	}
	savers := startSavers(t, ctx, s, p, 8)

	l := startLoad(s, keys)
	l.waitProgress(t, l.acked(), 5, 30*time.Second)

	// The slots to move: every slot on from that holds a test key.
	slots := map[int]bool{}
	for _, k := range keys {
		slots[slotOf(t, ctx, cc, k.key)] = true
	}
	for _, sv := range savers.sessions {
		slots[slotOf(t, ctx, cc, sv.data.String())] = true
	}
	var to *redistest.Server
	var moving []int
	for slot := range slots {
		owner, err := cluster.PrimaryOf(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		if owner == from {
			moving = append(moving, slot)
		} else if to == nil {
			to = owner
		}
	}
	sort.Ints(moving)
	askedBefore, _ := redistest.Stat(ctx, to, "commandstats", "cmdstat_asking", "calls")
	event := time.Now()
	for _, slot := range moving {
		m, err := cluster.StartMigration(ctx, slot, from, to)
		if err != nil {
			t.Fatal(err)
		}
		// One key first: calls for it are now asked over to the target (ASK), and
		// a call of two keys of which one moved is told to try again (TRYAGAIN).
		before := redirections(ctx, from)
		if n, err := m.MoveKeys(ctx, 1); err != nil {
			t.Fatal(err)
		} else if n == 1 {
			if !redistest.WaitFor(ctx, 30*time.Second, func() bool { return redirections(ctx, from) >= before+3 }) {
				t.Fatalf("slot %d: half moved, no call met ASK or TRYAGAIN within 30s", slot)
			}
		}
		if err := m.Finish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.WaitConverged(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	converged := time.Now()
	l.waitProgress(t, l.acked(), 5, 30*time.Second)
	savers.waitProgress(t, 3, 30*time.Second)
	calls := l.finish()
	saves := savers.finish()

	for _, slot := range moving {
		if owner, err := cluster.PrimaryOf(ctx, slot); err != nil || owner != to {
			t.Fatalf("slot %d is on %v after the resharding (%v), want %s", slot, owner, err, to.Addr)
		}
	}
	asked, _ := redistest.Stat(ctx, to, "commandstats", "cmdstat_asking", "calls")
	movedErrs, _ := redistest.Stat(ctx, from, "errorstats", "errorstat_MOVED", "count")
	askErrs, _ := redistest.Stat(ctx, from, "errorstats", "errorstat_ASK", "count")
	tryAgain, _ := redistest.Stat(ctx, from, "errorstats", "errorstat_TRYAGAIN", "count")
	t.Logf("resharding of %d slots from %s to %s took %s: the source answered ASK %d, TRYAGAIN %d and MOVED %d times, the target served %d ASKING",
		len(moving), from.Addr, to.Addr, converged.Sub(event).Round(time.Millisecond), askErrs, tryAgain, movedErrs, asked-askedBefore)
	if askErrs == 0 || movedErrs == 0 || asked == askedBefore {
		t.Errorf("the clients met no redirection (ASK %d, MOVED %d, ASKING %d): the test moved nothing they used", askErrs, movedErrs, asked-askedBefore)
	}
	if _, failed := errorWindow(t, calls, event, 0); failed > 0 {
		t.Errorf("%d calls failed during a resharding, which redirects every call", failed)
	}
	checker := b.checker(t, cluster, cc)
	account(t, ctx, checker, keys, calls)
	savers.account(t, ctx, checker, saves)
}

// redirections is how often s answered ASK or TRYAGAIN.
func redirections(ctx context.Context, s *redistest.Server) int64 {
	ask, _ := redistest.Stat(ctx, s, "errorstats", "errorstat_ASK", "count")
	try, _ := redistest.Stat(ctx, s, "errorstats", "errorstat_TRYAGAIN", "count")
	return ask + try
}

// testManualFailover runs CLUSTER FAILOVER on the replica of a primary that
// serves test keys, after that replica lost its scripts (as one added after
// the preload would have): callers see errors only while the roles swap, the
// promoted node loads the scripts on its first NOSCRIPT, and counts are exact.
func testManualFailover(t *testing.T, b backend, cluster *redistest.Cluster, p sessions.Prefix) {
	ctx := context.Background()
	cc := clusterClient(t, cluster)
	s := b.connect(t, ctx, cluster, cc, p)
	preload(t, ctx, cluster, s)
	keys := accounts(t, ctx, cluster, cc, p, "failover")
	primary, err := cluster.PrimaryOf(ctx, slotOf(t, ctx, cc, keys[0].key))
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := cluster.ReplicasOf(ctx, primary)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("replicas of %s: %v %v", primary.Addr, replicas, err)
	}
	promoted := replicas[0]
	if err := promoted.Admin().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	noScriptBefore, _ := redistest.Stat(ctx, promoted, "errorstats", "errorstat_NOSCRIPT", "count")

	l := startLoad(s, keys)
	l.waitProgress(t, l.acked(), 5, 30*time.Second)
	event := time.Now()
	if err := cluster.Failover(ctx, promoted); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitConverged(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	converged := time.Now()
	l.waitProgress(t, l.acked(), 5, 30*time.Second)
	calls := l.finish()

	t.Logf("manual failover %s -> %s: converged %s after CLUSTER FAILOVER", primary.Addr, promoted.Addr, converged.Sub(event).Round(time.Millisecond))
	errorWindow(t, calls, event, 10*time.Second)
	noScript, _ := redistest.Stat(ctx, promoted, "errorstats", "errorstat_NOSCRIPT", "count")
	exists, err := promoted.Admin().ScriptExists(ctx, sessions.LoginAttemptScript.SHA1()).Result()
	if err != nil || !exists[0] {
		t.Fatalf("the promoted node does not hold login_attempt: %v %v", exists, err)
	}
	if noScript == noScriptBefore {
		t.Fatalf("the promoted node, which had no scripts, never answered NOSCRIPT: calls did not reach it")
	}
	t.Logf("the promoted node answered NOSCRIPT %d times and then served the load", noScript-noScriptBefore)
	account(t, ctx, b.checker(t, cluster, cc), keys, calls)
}

// testPrimaryKilled kills a primary that serves test keys with SIGKILL: its
// preloaded replica takes over once the others count it failed, callers see
// typed errors only until then, and counts are exact.
func testPrimaryKilled(t *testing.T, b backend, cluster *redistest.Cluster, p sessions.Prefix) {
	ctx := context.Background()
	cc := clusterClient(t, cluster)
	s := b.connect(t, ctx, cluster, cc, p)
	preload(t, ctx, cluster, s)
	keys := accounts(t, ctx, cluster, cc, p, "kill")
	slot := slotOf(t, ctx, cc, keys[0].key)
	victim, err := cluster.PrimaryOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := cluster.ReplicasOf(ctx, victim)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("replicas of %s: %v %v", victim.Addr, replicas, err)
	}
	heir := replicas[0]
	noScriptBefore, _ := redistest.Stat(ctx, heir, "errorstats", "errorstat_NOSCRIPT", "count")

	l := startLoad(s, keys)
	l.waitProgress(t, l.acked(), 5, 30*time.Second)
	event := time.Now()
	victim.Kill()
	if err := cluster.WaitConverged(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	converged := time.Now()
	if owner, err := cluster.PrimaryOf(ctx, slot); err != nil || owner != heir {
		t.Fatalf("after the kill the slot is on %v (%v), want the replica %s", owner, err, heir.Addr)
	}
	l.waitProgress(t, l.acked(), 5, 30*time.Second)
	calls := l.finish()

	t.Logf("primary %s killed: replica %s promoted, cluster converged %s after the kill (node timeout %s)",
		victim.Addr, heir.Addr, converged.Sub(event).Round(time.Millisecond), nodeTimeout)
	errorWindow(t, calls, event, 10*nodeTimeout)
	if noScript, _ := redistest.Stat(ctx, heir, "errorstats", "errorstat_NOSCRIPT", "count"); noScript != noScriptBefore {
		t.Errorf("the preloaded replica answered NOSCRIPT %d times after its promotion", noScript-noScriptBefore)
	}
	account(t, ctx, b.checker(t, cluster, cc), keys, calls)
}

// savers keep saving one session each, as its lock's owner.
type savers struct {
	s        target
	sessions []*saver
	stop     chan struct{}
	wg       sync.WaitGroup
}

type saver struct {
	id    string
	data  sessions.SessionDataKey
	owner string
	ok    atomic.Int64
	saves []saveCall
}

type saveCall struct {
	version int64
	err     error
}

func startSavers(t *testing.T, ctx context.Context, s target, p sessions.Prefix, n int) *savers {
	t.Helper()
	sv := &savers{s: s, stop: make(chan struct{})}
	for i := 0; i < n; i++ {
		id := uuid.NewString()
		data, err := sessions.NewSessionDataKey(p, id)
		if err != nil {
			t.Fatal(err)
		}
		one := &saver{id: id, data: data, owner: "owner-" + strings.ReplaceAll(id, "-", "")}
		if ok, err := s.sessionLock(ctx, id, one.owner); err != nil || !ok {
			t.Fatalf("session lock: %v %v", ok, err)
		}
		sv.sessions = append(sv.sessions, one)
	}
	for _, one := range sv.sessions {
		sv.wg.Add(1)
		go func(one *saver) {
			defer sv.wg.Done()
			for {
				select {
				case <-sv.stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				v, err := s.sessionSave(cctx, one.id, one.owner, []byte("state"))
				cancel()
				one.saves = append(one.saves, saveCall{version: v, err: err})
				if err == nil {
					one.ok.Add(1)
				}
			}
		}(one)
	}
	return sv
}

func (sv *savers) waitProgress(t *testing.T, n int64, timeout time.Duration) {
	t.Helper()
	mark := make([]int64, len(sv.sessions))
	for i, one := range sv.sessions {
		mark[i] = one.ok.Load()
	}
	if !redistest.WaitFor(context.Background(), timeout, func() bool {
		for i, one := range sv.sessions {
			if one.ok.Load() < mark[i]+n {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("within %s not every session had %d more saves acknowledged", timeout, n)
	}
}

func (sv *savers) finish() map[*saver][]saveCall {
	close(sv.stop)
	sv.wg.Wait()
	out := map[*saver][]saveCall{}
	for _, one := range sv.sessions {
		out[one] = one.saves
	}
	return out
}

// account checks each session's version against its saves: every save
// acknowledged, none failed, each counted once, in order.
func (sv *savers) account(t *testing.T, ctx context.Context, cc *redis.ClusterClient, saves map[*saver][]saveCall) {
	t.Helper()
	total := 0
	for one, calls := range saves {
		for i, c := range calls {
			if c.err != nil {
				t.Errorf("session save %d failed: %v", i, c.err)
				continue
			}
			if c.version != int64(i+1) {
				t.Errorf("session save %d answered version %d, want %d", i, c.version, i+1)
			}
		}
		v, err := cc.HGet(ctx, one.data.String(), "version").Int64()
		if err != nil || v != int64(len(calls)) {
			t.Errorf("session version %d (%v) after %d saves", v, err, len(calls))
		}
		total += len(calls)
	}
	t.Logf("sessions: %d saves on %d sessions, each counted exactly once", total, len(saves))
}
