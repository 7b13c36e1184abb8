package legacystub_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/vm1/legacystub"
	"github.com/redis/go-redis/v9"
)

// stubBudget is the poll + recovery budget the stub's task TTL must exceed, as
// keyspec.yaml declares it (ttl exceeds of legacy_safety_task), as one span.
func stubBudget(t *testing.T) (poll, recovery time.Duration) {
	t.Helper()
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if k := spec.Key("legacy_safety_task"); k != nil && k.TTL.Exceeds > 0 {
		return k.TTL.Exceeds, 0
	}
	t.Fatal("keyspec.yaml declares no budget the stub's task TTL exceeds")
	return 0, 0
}

// On the harness: a task keeps its random state, counts its polls, is not kept
// alive by them, and outlasts the poll and recovery budgets the spec declares.
func TestLegacyStubHarnessCreateAndPoll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	stub := legacystub.New(scripts)
	clock := h.Clock()
	id := uuid.NewString()
	key, _ := vm1.NewLegacySafetyTaskKey(id)

	state, err := stub.Create(ctx, id)
	if err != nil || !slices.Contains(legacystub.States, state) {
		t.Fatalf("create: %q %v", state, err)
	}
	if e := h.Keyspace()[key.String()]; e.TTL != vm1.LegacySafetyTaskTTL || e.Hash["state"] != string(state) || e.Hash["polls"] != "0" {
		t.Fatalf("task %+v", e)
	}
	if _, err := stub.Create(ctx, id); !errors.Is(err, legacystub.ErrTaskExists) {
		t.Fatalf("second create: %v", err)
	}
	for i := int64(1); i <= 3; i++ {
		p, err := stub.Poll(ctx, id)
		if err != nil || p != (legacystub.Poll{State: state, Polls: i}) {
			t.Fatalf("poll %d: %+v %v", i, p, err)
		}
	}
	// Polls run through the whole poll budget and the recovery budget after it;
	// they never extend the TTL, and the task is still there at the end.
	poll, recovery := stubBudget(t)
	for step := time.Duration(0); step < poll+recovery; step += time.Minute {
		clock.Advance(time.Minute)
		if _, err := stub.Poll(ctx, id); err != nil {
			t.Fatalf("poll %v into the budget: %v", step+time.Minute, err)
		}
	}
	if ttl := h.Keyspace()[key.String()].TTL; ttl != vm1.LegacySafetyTaskTTL-(poll+recovery) {
		t.Fatalf("TTL %v after the budget: polls extended it (want %v)", ttl, vm1.LegacySafetyTaskTTL-(poll+recovery))
	}
	clock.Set(scripttest.T0.Add(vm1.LegacySafetyTaskTTL + time.Millisecond))
	if _, err := stub.Poll(ctx, id); !errors.Is(err, legacystub.ErrTaskNotFound) {
		t.Fatalf("poll after the TTL: %v", err)
	}
	if _, err := stub.Poll(ctx, "task:*"); !errors.Is(err, runtime.ErrInvalidKeyPart) {
		t.Fatalf("a forging task id: %v", err)
	}
	if len(h.Keyspace()) != 0 {
		t.Fatalf("keys left: %v", h.Keyspace())
	}
}

// The state is random among the stub's states: all of them turn up.
func TestLegacyStubHarnessRandomStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, scripts := scripttest.VM1Harness(t)
	stub := legacystub.New(scripts)
	seen := map[legacystub.State]int{}
	for i := 0; i < 300; i++ {
		st, err := stub.Create(ctx, uuid.NewString())
		if err != nil {
			t.Fatal(err)
		}
		seen[st]++
	}
	for _, st := range legacystub.States {
		if seen[st] == 0 {
			t.Errorf("state %s never chosen in 300 tasks: %v", st, seen)
		}
	}
	if len(seen) != len(legacystub.States) {
		t.Errorf("states outside the allow-list: %v", seen)
	}
}

// stubCommandLog records the commands a client sends.
type stubCommandLog struct {
	mu   sync.Mutex
	cmds [][]any
}

func (l *stubCommandLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *stubCommandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.mu.Lock()
		l.cmds = append(l.cmds, cmd.Args())
		l.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (l *stubCommandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// stubKeysLeft counts the keys of the stub's namespace with a full SCAN.
func stubKeysLeft(t *testing.T, c *redis.Client) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	iter := c.Scan(ctx, 0, legacystub.Namespace, 1000).Iterator()
	for iter.Next(ctx) {
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// After the cutover no stub key is left in DB2, nothing else was touched, every
// command was bounded, and the stub refuses work.
func TestLegacyStubCutoverLeavesNoStubKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, scripts, _ := scripttest.VM1(t)
	db1, db2 := srv.Client(vm1.DB1), srv.Client(vm1.DB2)
	stub := legacystub.New(scripts)

	const tasks = 1500
	var ids []string
	for i := 0; i < tasks; i++ {
		id := uuid.NewString()
		if _, err := stub.Create(ctx, id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids[:100] {
		if _, err := stub.Poll(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	scripttest.AuditTTLs(t, db2, vm1.Keys)
	// Keys the cutover must not touch: DB1's, and (test-only) a DB2 key outside
	// the stub's namespace.
	snapKey, _ := vm1.NewSettingsSnapshotKey(7)
	if _, err := scripts.SettingsSnapshotPut(ctx, snapKey, vm1.SettingsSnapshotPutArgs{Value: []byte{0x80}}); err != nil {
		t.Fatal(err)
	}
	if err := db2.Set(ctx, "han:legacyish:not-the-stub", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	var log stubCommandLog
	ops := srv.Client(vm1.DB2)
	ops.AddHook(&log)
	rep, err := legacystub.Cutover(ctx, stub, ops, legacystub.CutoverOptions{Batch: 100})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != tasks || rep.Sweeps != 2 {
		t.Fatalf("cutover %+v, want %d deleted in 2 sweeps (the second finds nothing)", rep, tasks)
	}
	if left := stubKeysLeft(t, db2); left != 0 {
		t.Fatalf("%d stub keys left after the cutover", left)
	}
	if db2.Exists(ctx, "han:legacyish:not-the-stub").Val() != 1 || db1.Exists(ctx, snapKey.String()).Val() != 1 {
		t.Fatal("the cutover touched a key outside han:legacy:* in DB2, or a DB1 key")
	}
	for _, args := range log.cmds {
		name := strings.ToLower(args[0].(string))
		switch {
		case name == "scan":
			if !slices.Contains(args, any("match")) || !slices.Contains(args, any(legacystub.Namespace)) || args[len(args)-1] != int64(100) {
				t.Errorf("unbounded or unfiltered SCAN: %v", args)
			}
		case name == "unlink":
			if len(args)-1 > 100 {
				t.Errorf("UNLINK of %d keys, the batch is 100", len(args)-1)
			}
		case name == "hello" || name == "client" || name == "select" || name == "ping":
		default:
			t.Errorf("the cutover sent %s", name)
		}
	}
	if _, err := stub.Create(ctx, uuid.NewString()); !errors.Is(err, legacystub.ErrCutOver) {
		t.Fatalf("create after the cutover: %v", err)
	}
	if _, err := stub.Poll(ctx, ids[0]); !errors.Is(err, legacystub.ErrCutOver) {
		t.Fatalf("poll after the cutover: %v", err)
	}
	// Seen through a stub that was not closed: every task is gone.
	fresh := legacystub.New(scripts)
	for _, id := range ids[:10] {
		if _, err := fresh.Poll(ctx, id); !errors.Is(err, legacystub.ErrTaskNotFound) {
			t.Fatalf("poll of a task after the cutover: %v", err)
		}
	}
	// Run again: nothing to do, still nothing left.
	if rep, err := legacystub.Cutover(ctx, nil, db2, legacystub.CutoverOptions{}); err != nil || rep.Deleted != 0 || rep.Sweeps != 1 {
		t.Fatalf("second cutover: %+v %v", rep, err)
	}
}

// The stub and its cutover run with the commands they claim and nothing else: a
// user restricted to ~han:legacy:*, EVALSHA and SCRIPT LOAD, the commands the
// stub scripts call (EXISTS, HSET, PEXPIRE, HGET, HINCRBY), SCAN and UNLINK (plus
// the connection handshake) runs the stub and the whole cutover in DB2.
func TestLegacyStubCutoverNeedsOnlyScanAndUnlink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const pw = "stub-ops-test-password-51d2"
	srv := redistest.Start(t, redistest.WithACL(
		"user default on nopass ~* &* +@all\n"+
			"user stub_ops on >"+pw+" resetkeys ~han:legacy:* resetchannels -@all +hello +auth +select +ping"+
			" +evalsha +script|load +exists +hset +pexpire +hget +hincrby +scan +unlink\n"))
	db2 := srv.Client(vm1.DB2, func(o *redis.Options) { o.Username, o.Password = "stub_ops", pw })
	scripts, err := vm1.NewScripts(vm1.Clients{DB2: db2})
	if err != nil {
		t.Fatal(err)
	}
	stub := legacystub.New(scripts)
	for i := 0; i < 50; i++ {
		if _, err := stub.Create(ctx, uuid.NewString()); err != nil {
			t.Fatalf("create as stub_ops: %v", err)
		}
	}
	if err := db2.Del(ctx, "han:legacy:x").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("the restricted user may run DEL (%v): the test proves nothing", err)
	}
	rep, err := legacystub.Cutover(ctx, stub, db2, legacystub.CutoverOptions{Batch: 7})
	if err != nil || rep.Deleted != 50 {
		t.Fatalf("cutover as stub_ops: %+v %v", rep, err)
	}
	admin := srv.Client(vm1.DB2)
	if n := admin.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("%d keys left in DB2", n)
	}
}

// The cutover refuses a client of another database and bad options before it
// sends anything.
func TestLegacyStubCutoverRefusesTheWrongDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, _, _ := scripttest.VM1(t)
	if _, err := legacystub.Cutover(ctx, nil, srv.Client(vm1.DB1), legacystub.CutoverOptions{}); !errors.Is(err, runtime.ErrWrongDB) {
		t.Fatalf("a DB1 client: %v", err)
	}
	for _, o := range []legacystub.CutoverOptions{{Batch: 1001}, {Batch: -1}, {MaxSweeps: 1}, {MaxSweeps: 101}} {
		if _, err := legacystub.Cutover(ctx, nil, srv.Client(vm1.DB2), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

// evalGate holds the first hold EVALSHAs of a client until release is closed, and
// counts the calls it let in and the ones Redis answered.
type evalGate struct {
	hold              int64
	release           chan struct{}
	entered, answered atomic.Int64
}

func (g *evalGate) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g *evalGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !strings.EqualFold(cmd.Name(), "evalsha") {
			return next(ctx, cmd)
		}
		if g.entered.Add(1) <= g.hold {
			<-g.release
		}
		err := next(ctx, cmd)
		g.answered.Add(1)
		return err
	}
}
func (g *evalGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// scanWatch records every SCAN of the cutover, and whether one was sent while a
// Create of the stub had not been answered yet.
type scanWatch struct {
	gate          *evalGate
	scans         atomic.Int64
	whileInFlight atomic.Bool
}

func (w *scanWatch) DialHook(next redis.DialHook) redis.DialHook { return next }
func (w *scanWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "scan") {
			w.scans.Add(1)
			if w.gate.entered.Load() != w.gate.answered.Load() {
				w.whileInFlight.Store(true)
			}
		}
		return next(ctx, cmd)
	}
}
func (w *scanWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Creates that passed the stub's check before the cutover closed it, and whose
// EVALSHA is still on its way: the cutover waits for them before its first SCAN,
// so their keys are swept and none is left once Cutover returns.
func TestLegacyStubCutoverWaitsForCallsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, _, _ := scripttest.VM1(t)
	db2 := srv.Client(vm1.DB2)
	const inFlight = 20
	gate := &evalGate{hold: inFlight, release: make(chan struct{})}
	stubClient := srv.Client(vm1.DB2)
	stubClient.AddHook(gate)
	scripts, err := vm1.NewScripts(vm1.Clients{DB2: stubClient})
	if err != nil {
		t.Fatal(err)
	}
	stub := legacystub.New(scripts)

	var wg sync.WaitGroup
	var created atomic.Int64
	for i := 0; i < inFlight; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := stub.Create(ctx, uuid.NewString()); err != nil {
				t.Errorf("a create admitted before the cutover: %v", err)
				return
			}
			created.Add(1)
		}()
	}
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return gate.entered.Load() == inFlight }) {
		t.Fatalf("%d creates reached Redis, want %d", gate.entered.Load(), inFlight)
	}

	watch := &scanWatch{gate: gate}
	ops := srv.Client(vm1.DB2)
	ops.AddHook(watch)
	type result struct {
		rep legacystub.CutoverReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := legacystub.Cutover(ctx, stub, ops, legacystub.CutoverOptions{Batch: 7})
		done <- result{rep, err}
	}()
	// The stub is closed for new calls at once (a probe that comes before the
	// close is not held back, and makes one more task to sweep)...
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool {
		_, err := stub.Create(ctx, uuid.NewString())
		if err == nil {
			created.Add(1)
		}
		return errors.Is(err, legacystub.ErrCutOver)
	}) {
		t.Fatal("the stub still admits creates during the cutover")
	}
	// ...but no sweep starts while the admitted creates are held back: give a
	// sweep that does not wait the time to show itself.
	redistest.WaitFor(ctx, 500*time.Millisecond, func() bool { return watch.scans.Load() > 0 })
	close(gate.release)
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cutover never returned after the creates were answered")
	}
	wg.Wait()
	if watch.whileInFlight.Load() {
		t.Error("the cutover sent SCAN while creates of the stub were still in flight")
	}
	if res.err != nil || created.Load() < inFlight || res.rep.Deleted != created.Load() {
		t.Fatalf("cutover %+v %v; %d creates succeeded (%d held), want every one deleted", res.rep, res.err, created.Load(), inFlight)
	}
	if left := stubKeysLeft(t, db2); left != 0 {
		t.Fatalf("%d stub keys left after the cutover", left)
	}
}

// A Close whose context ends while a call is still in flight fails with the
// context's error and leaves the stub closed; a Cutover in that state sweeps
// nothing, since it cannot vouch for the result.
func TestLegacyStubCloseGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, _, _ := scripttest.VM1(t)
	gate := &evalGate{hold: 1, release: make(chan struct{})}
	stubClient := srv.Client(vm1.DB2)
	stubClient.AddHook(gate)
	scripts, err := vm1.NewScripts(vm1.Clients{DB2: stubClient})
	if err != nil {
		t.Fatal(err)
	}
	stub := legacystub.New(scripts)
	createDone := make(chan error, 1)
	go func() {
		_, err := stub.Create(ctx, uuid.NewString())
		createDone <- err
	}()
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return gate.entered.Load() == 1 }) {
		t.Fatal("the create never reached Redis")
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := stub.Close(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close with a create in flight: %v", err)
	}
	if _, err := stub.Poll(ctx, uuid.NewString()); !errors.Is(err, legacystub.ErrCutOver) {
		t.Fatalf("poll after a close that gave up: %v", err)
	}
	watch := &scanWatch{gate: gate}
	ops := srv.Client(vm1.DB2)
	ops.AddHook(watch)
	if _, err := legacystub.Cutover(short, stub, ops, legacystub.CutoverOptions{}); !errors.Is(err, context.DeadlineExceeded) || watch.scans.Load() != 0 {
		t.Fatalf("cutover with a create in flight and an ended context: %v, %d SCANs", err, watch.scans.Load())
	}
	close(gate.release)
	if err := <-createDone; err != nil {
		t.Fatal(err)
	}
	if err := stub.Close(ctx); err != nil {
		t.Fatalf("close once the create returned: %v", err)
	}
	if rep, err := legacystub.Cutover(ctx, stub, srv.Client(vm1.DB2), legacystub.CutoverOptions{}); err != nil || rep.Deleted != 1 {
		t.Fatalf("cutover: %+v %v", rep, err)
	}
}

// Many goroutines create and poll tasks as fast as they can while the cutover
// runs: once Cutover returns, no stub key is left.
func TestLegacyStubCutoverRacingCreates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, scripts, _ := scripttest.VM1(t)
	db2 := srv.Client(vm1.DB2)
	stub := legacystub.New(scripts)
	const workers = 32
	var wg sync.WaitGroup
	var created atomic.Int64
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id := uuid.NewString()
				_, err := stub.Create(ctx, id)
				if errors.Is(err, legacystub.ErrCutOver) {
					return
				}
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				created.Add(1)
				if _, err := stub.Poll(ctx, id); err != nil && !errors.Is(err, legacystub.ErrCutOver) {
					t.Errorf("poll: %v", err)
					return
				}
			}
		}()
	}
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool { return created.Load() >= 500 }) {
		t.Fatalf("only %d creates before the cutover", created.Load())
	}
	rep, err := legacystub.Cutover(ctx, stub, db2, legacystub.CutoverOptions{Batch: 50})
	if err != nil {
		t.Fatal(err)
	}
	if left := stubKeysLeft(t, db2); left != 0 {
		t.Fatalf("%d stub keys left after the cutover (%+v)", left, rep)
	}
	wg.Wait()
	if rep.Deleted != created.Load() {
		t.Fatalf("the cutover deleted %d keys, %d creates succeeded", rep.Deleted, created.Load())
	}
}
