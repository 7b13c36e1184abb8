package tests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/legacystub"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

func stubOn(t *testing.T, scripts *vm1.Scripts) *legacystub.Stub {
	t.Helper()
	s, err := legacystub.New(scripts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stubBudget is vm1.db2's poll + recovery budget as keyspec.yaml declares it.
func stubBudget(t *testing.T) (poll, recovery time.Duration) {
	t.Helper()
	spec, err := keyspec.Load("../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range spec.Instances {
		for _, d := range in.DBs {
			if d.Legacy != nil {
				return d.Legacy.PollBudget, d.Legacy.RecoveryBudget
			}
		}
	}
	t.Fatal("keyspec.yaml declares no legacy database")
	return 0, 0
}

// On the harness: a task keeps its random state, counts its polls, is not kept
// alive by them, and outlasts the poll and recovery budgets the spec declares.
func TestLegacyStubHarnessCreateAndPoll(t *testing.T) {
	ctx := context.Background()
	h, _, scripts := rtHarness(t)
	stub := stubOn(t, scripts)
	clock := h.Clock()
	id := uuid(t)
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
	clock.Set(t0.Add(vm1.LegacySafetyTaskTTL + time.Millisecond))
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
	ctx := context.Background()
	_, _, scripts := rtHarness(t)
	stub := stubOn(t, scripts)
	seen := map[legacystub.State]int{}
	for i := 0; i < 300; i++ {
		st, err := stub.Create(ctx, uuid(t))
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
	ctx := context.Background()
	srv, scripts, _ := vm1Server(t)
	db1, db2 := srv.Client(vm1.DB1), srv.Client(vm1.DB2)
	stub := stubOn(t, scripts)

	const tasks = 1500
	var ids []string
	for i := 0; i < tasks; i++ {
		id := uuid(t)
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
	auditTTLs(t, db2, vm1.Keys)
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
	if _, err := stub.Create(ctx, uuid(t)); !errors.Is(err, legacystub.ErrCutOver) {
		t.Fatalf("create after the cutover: %v", err)
	}
	if _, err := stub.Poll(ctx, ids[0]); !errors.Is(err, legacystub.ErrCutOver) {
		t.Fatalf("poll after the cutover: %v", err)
	}
	// Seen through a stub that was not closed: every task is gone.
	fresh := stubOn(t, scripts)
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
	stub := stubOn(t, scripts)
	for i := 0; i < 50; i++ {
		if _, err := stub.Create(ctx, uuid(t)); err != nil {
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
	ctx := context.Background()
	srv, _, _ := vm1Server(t)
	if _, err := legacystub.Cutover(ctx, nil, srv.Client(vm1.DB1), legacystub.CutoverOptions{}); !errors.Is(err, runtime.ErrWrongDB) {
		t.Fatalf("a DB1 client: %v", err)
	}
	for _, o := range []legacystub.CutoverOptions{{Batch: 1001}, {Batch: -1}, {MaxSweeps: 1}, {MaxSweeps: 101}} {
		if _, err := legacystub.Cutover(ctx, nil, srv.Client(vm1.DB2), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

// With the stub marked cut_over in keyspec.yaml, generated code keeps nothing of
// it: no key, script, URL or ACL prefix; exactly the two stub scripts leave.
func TestLegacyStubCutOverSpecGeneratesNothingOfTheStub(t *testing.T) {
	src, err := os.ReadFile("../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("state: alive")) {
		t.Fatal("keyspec.yaml does not mark the stub alive; this test flips that mark")
	}
	spec, err := keyspec.Parse("keyspec.yaml", bytes.Replace(src, []byte("state: alive"), []byte("state: cut_over"), 1))
	if err != nil {
		t.Fatal(err)
	}
	files, err := gen.Generate(spec, os.DirFS("../lua"), gen.Options{Instances: []string{"vm1"}})
	if err != nil {
		t.Fatal(err)
	}
	stub := regexp.MustCompile(`han:legacy:|SAFETY_STUB_REDIS_URL|StubTask|stub_task|LegacySafetyTask|DB2`)
	var all []byte
	for _, p := range files.Paths() {
		if m := stub.Find(files[p]); m != nil {
			t.Errorf("after the cutover %s still names %q", p, m)
		}
		all = append(all, files[p]...)
	}
	// Every other script is still generated.
	for _, s := range vm1.AllScripts() {
		gone := !bytes.Contains(all, []byte(`"`+s.Name()+`"`))
		if isStub := strings.HasPrefix(s.Name(), "stub_task_"); gone != isStub {
			t.Errorf("script %s: gone after the cutover = %v", s.Name(), gone)
		}
	}
	// The live generation still has them (the test can tell the difference).
	if !slices.Contains(vm1.APIBackendKeyPatterns, legacystub.Namespace) {
		t.Fatalf("the live ACL patterns %v lack %s", vm1.APIBackendKeyPatterns, legacystub.Namespace)
	}
}
