package rueidisbackend_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/rueidisbackend"
	"github.com/redis/rueidis"
)

func script(t *testing.T, name, src string, ro bool, opts ...runtime.ScriptOption) *runtime.Script {
	t.Helper()
	sum := sha1.Sum([]byte(src))
	s, err := runtime.NewScript(name, src, hex.EncodeToString(sum[:]), ro, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	incrSrc = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
	getSrc  = "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])"
	failSrc = "return redis.error_reply('CONFLICT the record holds another fingerprint')"
	logSrc  = "redis.call('RPUSH', KEYS[1], ARGV[1]) return 1"
)

func conn(t *testing.T, srv *redistest.Server, db int) (*rueidisbackend.Conn, rueidis.Client) {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, SelectDB: db, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	c, err := rueidisbackend.New(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	return c, rc
}

func call(s *runtime.Script, key string, args ...int64) runtime.Input {
	in := s.Input(1, len(args))
	in.Key("k", key)
	for _, a := range args {
		in.Int("n", a, -1000, 1000)
	}
	return in
}

func asInt(v any) (int64, error) { return v.(int64), nil }

func TestBindChecksTheDatabase(t *testing.T) {
	redistest.Need(t)
	srv := redistest.Start(t)
	c1, _ := conn(t, srv, 1)
	if c1.DB() != 1 {
		t.Fatalf("New read db %d, want 1", c1.DB())
	}
	if _, err := rueidisbackend.Bind(c1, "t db0", 0, nil); !errors.Is(err, runtime.ErrWrongDB) {
		t.Fatalf("a DB1 client as DB0: %v, want ErrWrongDB", err)
	}
	db, err := rueidisbackend.Bind(nil, "t db2", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Run(context.Background(), db, call(script(t, "incr", incrSrc, false), "n", 1), asInt); !errors.Is(err, runtime.ErrNoClient) {
		t.Fatalf("no client: %v", err)
	}
}

// The typed path on rueidis: EVALSHA, EVALSHA_RO for a read-only script, an
// error reply as a typed *runtime.ScriptError, NOSCRIPT recovered with one
// SCRIPT LOAD however many callers meet it, an ended context sending nothing.
func TestRunOnRueidis(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(0)
	c, _ := conn(t, srv, 0)
	db, err := rueidisbackend.Bind(c, "t db0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	incr, get, fail := script(t, "incr", incrSrc, false), script(t, "get", getSrc, true), script(t, "fail", failSrc, false)
	if v, err := runtime.Run(ctx, db, call(incr, "n", 5), asInt); err != nil || v != 5 {
		t.Fatalf("INCRBY through a missing script: %v %v", v, err)
	}
	if v, err := runtime.Run(ctx, db, call(get, "n"), func(v any) (any, error) { return v, nil }); err != nil || v != "5" {
		t.Fatalf("read-only GET: %v %v", v, err)
	}
	if n := redistest.CommandCalls(t, admin, "evalsha_ro"); n != 2 {
		t.Fatalf("the read-only script went out as %d EVALSHA_RO, want 2 (NOSCRIPT, then the call)", n)
	}
	_, err = runtime.Run(ctx, db, call(fail, "n"), asInt)
	var se *runtime.ScriptError
	if !errors.As(err, &se) || se.Code != "CONFLICT" || !errors.Is(err, runtime.ErrorCode("CONFLICT")) {
		t.Fatalf("error reply: %v, want a ScriptError CONFLICT", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := runtime.Run(cancelled, db, call(incr, "n", 1), asInt); !errors.Is(err, context.Canceled) || errors.Is(err, runtime.ErrOutcomeUnknown) {
		t.Fatalf("a cancelled context: %v, want Canceled, not sent", err)
	}
	if v, _ := admin.Get(ctx, "n").Int(); v != 5 {
		t.Fatalf("n = %d after a cancelled call, want 5", v)
	}
	// A round whose callers happen to arrive one after another (a loaded
	// machine) forms no herd, and its few loads are right; so the rounds are
	// judged together: without shared loads every NOSCRIPT sends one.
	const rounds = 3
	var herd, herdLoads int64
	for round := 0; round < rounds; round++ {
		if err := admin.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		const callers = 50
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := 0; g < callers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := runtime.Run(ctx, db, call(incr, "herd", 1), asInt); err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		noscript := redistest.CommandCalls(t, admin, "evalsha") - callers
		loads := redistest.CommandCalls(t, admin, "script|load")
		t.Logf("round %d: %d callers met NOSCRIPT, %d SCRIPT LOADs", round, noscript, loads)
		if noscript > 0 && (loads < 1 || loads > noscript) {
			t.Fatalf("round %d: %d callers met NOSCRIPT and sent %d SCRIPT LOADs", round, noscript, loads)
		}
		herd += int64(noscript)
		herdLoads += int64(loads)
	}
	if herd < 10 {
		t.Fatalf("only %d callers met NOSCRIPT in %d rounds: no herd formed, nothing was measured", herd, rounds)
	}
	if herdLoads*5 > herd+4*rounds {
		t.Fatalf("%d callers met NOSCRIPT and sent %d SCRIPT LOADs; want them to share loads", herd, herdLoads)
	}
	if v, _ := admin.Get(ctx, "herd").Int(); v != 150 {
		t.Fatalf("herd = %d, want 150", v)
	}
	r, err := rueidisbackend.PreloadNodes(ctx, c, incr, get)
	if err != nil || len(r.Nodes) != 1 || r.Nodes[0].Role != runtime.RoleServer || len(r.Nodes[0].Loaded) != 2 {
		t.Fatalf("PreloadNodes: %v %v", r, err)
	}
}

// A deadline bounds the wait while the server is busy (a 2 s CLIENT PAUSE);
// the call was written, so its outcome is unknown.
func TestDeadlineWhileTheServerIsBusy(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(0)
	c, _ := conn(t, srv, 0)
	db, err := rueidisbackend.Bind(c, "t db0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	incr := script(t, "incr", incrSrc, false)
	if err := rueidisbackend.Preload(ctx, c, incr); err != nil {
		t.Fatal(err)
	}
	const pause = 2 * time.Second
	if err := admin.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = runtime.Run(dctx, db, call(incr, "n", 1), asInt)
	if returned := time.Since(paused); returned >= pause {
		t.Fatalf("returned after %v, when the pause of %v was over", returned, pause)
	}
	if !errors.Is(err, runtime.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline while busy: %v, want ErrOutcomeUnknown and DeadlineExceeded", err)
	}
}

// A script not declared safe to replay runs at most once per call while
// CLIENT KILL drops rueidis's connections under 50 callers; each execution is
// logged by the script, so the effects are counted exactly.
func TestNotReplaySafeRunsAtMostOnceWhenConnectionsDie(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(0)
	c, _ := conn(t, srv, 0)
	db, err := rueidisbackend.Bind(c, "t db0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	logScript := script(t, "log", logSrc, false)
	if err := rueidisbackend.Preload(ctx, c, logScript); err != nil {
		t.Fatal(err)
	}
	const callers, kills = 50, 30
	var answered, unknown, failed sync.Map
	var done atomic.Int64
	stop, killed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(killed)
		for i := 0; i < kills; i++ {
			before := done.Load()
			if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return done.Load() >= before+callers }) {
				t.Error("the callers stopped making progress")
				return
			}
			if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%d-%d", g, i)
				in := logScript.Input(1, 1)
				in.Key("log", "log")
				in.String("id", id, 64)
				_, err := runtime.Run(ctx, db, in, asInt)
				switch {
				case err == nil:
					answered.Store(id, true)
				case errors.Is(err, runtime.ErrOutcomeUnknown):
					unknown.Store(id, true)
				default:
					failed.Store(id, err)
				}
				done.Add(1)
			}
		}()
	}
	<-killed
	close(stop)
	wg.Wait()
	entries, err := admin.LRange(ctx, "log", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, id := range entries {
		runs[id]++
	}
	var nAnswered, nUnknown, nFailed int
	answered.Range(func(k, _ any) bool {
		nAnswered++
		if runs[k.(string)] != 1 {
			t.Errorf("call %s was answered but ran %d times", k, runs[k.(string)])
		}
		return true
	})
	unknown.Range(func(k, _ any) bool { nUnknown++; return true })
	failed.Range(func(k, v any) bool {
		nFailed++
		if runs[k.(string)] != 0 {
			t.Errorf("call %s failed with %v (not an unknown outcome) but ran", k, v)
		}
		return true
	})
	for id, n := range runs {
		if n > 1 {
			t.Errorf("call %s ran %d times", id, n)
		}
	}
	t.Logf("%d answered, %d of unknown outcome, %d failed before sending; %d executions; %d CLIENT KILLs", nAnswered, nUnknown, nFailed, len(entries), kills)
	if nUnknown == 0 {
		t.Error("no call met a killed connection: the test did not exercise anything")
	}
}

// On a 3-primary, 3-replica cluster: PreloadNodes loads every node rueidis
// knows and reports its role, calls land on every primary, and after SCRIPT
// FLUSH on every node the calls recover NOSCRIPT and run once each.
func TestOnCluster(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	cl := redistest.StartClusterWith(t, redistest.ClusterConfig{Primaries: 3, Replicas: 1})
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true, SendToReplicas: func(rueidis.Completed) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	c, err := rueidisbackend.New(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	db, err := rueidisbackend.Bind(c, "t db0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	incr := script(t, "incr", incrSrc, false)
	r, err := rueidisbackend.PreloadNodes(ctx, c, incr)
	if err != nil {
		t.Fatalf("PreloadNodes: %v\n%s", err, r)
	}
	roles := map[string]int{}
	for _, n := range r.Nodes {
		roles[n.Role]++
		if len(n.Loaded) != 1 {
			t.Errorf("%s %s loaded %v", n.Role, n.Addr, n.Loaded)
		}
	}
	if roles[runtime.RolePrimary] != 3 {
		t.Fatalf("PreloadNodes reached %v, want the 3 primaries\n%s", roles, r)
	}
	keys := make([]string, 60)
	for i := range keys {
		keys[i] = fmt.Sprintf("k:%d", i)
	}
	for round := 1; round <= 2; round++ {
		for _, s := range cl.Nodes {
			if err := s.Client(0).ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range keys {
			if v, err := runtime.Run(ctx, db, call(incr, k, 1), asInt); err != nil || v != int64(round) {
				t.Fatalf("round %d, %s: %v %v", round, k, v, err)
			}
		}
	}
}
