package tests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/hanchat/luagen/services/vm1/settings"
	"github.com/redis/go-redis/v9"
)

// checkAOF runs redis-check-aof with args (and stdin) and returns its exit code
// and output.
func checkAOF(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	bin, err := exec.LookPath("redis-check-aof")
	if err != nil {
		t.Fatalf("redis-check-aof is not on PATH (it comes with redis-server): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("redis-check-aof %v: %v\n%s", args, err, out)
	return -1, ""
}

// startRefused starts the (stopped) server's redis-server by hand and
// requires it to refuse its data and exit; it returns what it logged. A
// server that comes up instead is killed and fails the test.
func startRefused(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	if srv.Running() {
		t.Fatal("the server is running")
	}
	mark := logMark(srv)
	cmd := exec.Command("redis-server", srv.ConfigPath())
	cmd.Dir = srv.Dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
	done := false
	ended := redistest.WaitFor(context.Background(), 15*time.Second, func() bool {
		select {
		case waitErr = <-exited:
			done = true
			return true
		default:
		}
		return strings.Contains(logSince(srv, mark), "Ready to accept connections")
	})
	if !done {
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("redis-server started on the corrupt AOF (ended waiting: %v); log:\n%s", ended, logSince(srv, mark))
	}
	if waitErr == nil {
		t.Fatalf("redis-server exited 0 on a corrupt AOF; log:\n%s", logSince(srv, mark))
	}
	return logSince(srv, mark)
}

// rewriteAOF runs BGREWRITEAOF and waits until it is done and succeeded.
func rewriteAOF(t *testing.T, admin *redis.Client) {
	t.Helper()
	ctx := context.Background()
	if err := admin.BgRewriteAOF(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if !redistest.WaitFor(ctx, 30*time.Second, func() bool {
		return infoField(t, admin, "persistence", "aof_rewrite_in_progress") == "0" &&
			infoField(t, admin, "persistence", "aof_rewrite_scheduled") == "0" &&
			infoField(t, admin, "persistence", "aof_last_bgrewrite_status") == "ok" &&
			infoInt(t, admin, "persistence", "aof_rewrites") >= 1
	}) {
		t.Fatal("BGREWRITEAOF did not finish")
	}
}

// Seed 000 §12 and seed 004 §8 "corrupted AOF rehearsal", part 1: a crash
// tears the tail of the active incremental AOF in the middle of a command.
// The rehearsed procedure, on the generated VM1 config (appendonly yes,
// aof-use-rdb-preamble yes, aof-load-truncated yes):
//
//  1. Before anything else, copy appendonlydir/ aside.
//  2. Either start the server as it is: aof-load-truncated loads every
//     complete write and drops the torn one, a script's writes (a MULTI ...
//     EXEC block in the AOF) all or none. Then, before anything else, run
//     BGREWRITEAOF and wait for aof_last_bgrewrite_status:ok. Redis 7.0
//     truncates the file at the last complete command, which may lie inside
//     the torn script's MULTI block; the writes appended after it would, at
//     the next restart, commit the torn script's first writes without the
//     rest (here a presence hash without its TTL). The rewrite replaces the
//     torn file with the loaded state.
//  3. Or (preferred) run `redis-check-aof appendonlydir/appendonly.aof.manifest`,
//     which reports the torn file, then `redis-check-aof --fix <incr file>` and
//     answer y: it cuts before the torn MULTI block. Then start the server.
//
// Either way every complete write is back with its TTL, the torn script's
// writes are absent, and after more writes and another restart no key lacks a
// TTL.
func TestResilienceTornAOFTail(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a := startACLInstance(t, "vm1")
	s := newVM1Stack(t, a, nil, ratelimit.DefaultPolicy())
	admin0, admin1 := a.adminDB(vm1.DB0), a.adminDB(vm1.DB1)
	writeRestartState(t, s)
	complete0, complete1 := keyspaceOf(t, admin0), keyspaceOf(t, admin1)
	read := time.Now()

	// The last write, a heartbeat: MULTI, HSET and PEXPIREAT of the connection,
	// ZADD and PEXPIREAT of the user's set, EXEC.
	torn, _, err := s.presence.Connect(ctx, uuid.NewString(), 1)
	if err != nil {
		t.Fatal(err)
	}
	conn, _ := vm1.NewRTConnKey(torn.ID)
	set, _ := vm1.NewRTUserConnectionsKey(torn.UserID)
	connKey, setKey := conn.String(), set.String()
	file := incrAOF(t, a.srv.Dir)
	var units []aofUnit
	// Redis writes the AOF before it answers; wait until the bytes are readable.
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		units, err = parseAOF(b)
		return err == nil && len(units) > 0 && units[len(units)-1].mentions(setKey)
	}) {
		t.Fatal("the heartbeat never reached the AOF")
	}
	a.srv.Kill()

	last := units[len(units)-1]
	if !last.isMulti() || len(last.Commands) != 6 || !strings.EqualFold(last.Commands[2].Args[0], "pexpireat") || last.Commands[2].Args[1] != connKey {
		t.Fatalf("the heartbeat's unit is not MULTI, HSET, PEXPIREAT conn, ...: %+v", last.Commands)
	}
	cut := (last.Commands[2].Start + last.Commands[2].End) / 2 // mid-command: HSET complete, its TTL not
	if err := os.Truncate(file, cut); err != nil {
		t.Fatal(err)
	}
	aofDir := filepath.Join(a.srv.Dir, "appendonlydir")
	backup := filepath.Join(t.TempDir(), "appendonlydir")
	copyDir(t, aofDir, backup) // step 1

	// checkLoaded: every complete write is back, the torn heartbeat is not.
	checkLoaded := func(t *testing.T) {
		t.Helper()
		elapsed := time.Since(read)
		compareAfterRestart(t, "db0", complete0, keyspaceOf(t, admin0), elapsed)
		compareAfterRestart(t, "db1", complete1, keyspaceOf(t, admin1), elapsed)
		if ids, err := s.presence.Connections(ctx, torn.UserID, 10); err != nil || len(ids) != 0 {
			t.Errorf("the torn heartbeat's connection: %v %v, want none", ids, err)
		}
	}
	// moreThenRestart: the server goes on writing, restarts, and holds no key
	// without a TTL and nothing of the torn heartbeat.
	moreThenRestart := func(t *testing.T) {
		t.Helper()
		next, _, err := s.presence.Connect(ctx, uuid.NewString(), 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.settings.Put(ctx, 99, resilienceSettings{Limit: 1}); err != nil {
			t.Fatal(err)
		}
		mark := logMark(a.srv)
		a.srv.Stop()
		a.srv.Restart()
		checkCleanLoad(t, a.srv, mark)
		if n := admin1.Exists(ctx, connKey, setKey).Val(); n != 0 {
			t.Errorf("%d keys of the torn heartbeat came back", n)
		}
		if ids, err := s.presence.Connections(ctx, next.UserID, 10); err != nil || !slices.Equal(ids, []string{next.ID}) {
			t.Errorf("the connection written after the repair: %v %v", ids, err)
		}
		scripttest.AuditTTLs(t, admin0, vm1.Keys)
		scripttest.AuditTTLs(t, admin1, vm1.Keys)
	}

	t.Run("loaded as is, then rewritten", func(t *testing.T) {
		mark := logMark(a.srv)
		a.srv.Restart() // step 2
		if l := logSince(a.srv, mark); !strings.Contains(l, "loaded anyway because aof-load-truncated is enabled") {
			t.Fatalf("the server did not load the torn AOF as truncated; log:\n%s", l)
		}
		checkCleanLoad(t, a.srv, mark)
		checkLoaded(t)
		rewriteAOF(t, admin0)
		if code, out := checkAOF(t, "", filepath.Join(aofDir, "appendonly.aof.manifest")); code != 0 {
			t.Fatalf("after the rewrite redis-check-aof exits %d:\n%s", code, out)
		}
		moreThenRestart(t)
	})

	t.Run("fixed with redis-check-aof first", func(t *testing.T) {
		a.srv.Stop()
		if err := os.RemoveAll(aofDir); err != nil {
			t.Fatal(err)
		}
		copyDir(t, backup, aofDir)
		manifest := filepath.Join(aofDir, "appendonly.aof.manifest")
		if code, out := checkAOF(t, "", manifest); code == 0 || !strings.Contains(out, filepath.Base(file)) {
			t.Fatalf("redis-check-aof on the torn AOF exits %d:\n%s", code, out)
		}
		if code, out := checkAOF(t, "y\n", "--fix", file); code != 0 {
			t.Fatalf("redis-check-aof --fix exits %d:\n%s", code, out)
		}
		if fi, err := os.Stat(file); err != nil || fi.Size() != last.Start {
			t.Fatalf("after --fix the file is %v bytes (%v), want %d: cut before the torn MULTI", fi.Size(), err, last.Start)
		}
		if code, out := checkAOF(t, "", manifest); code != 0 {
			t.Fatalf("after --fix redis-check-aof exits %d:\n%s", code, out)
		}
		mark := logMark(a.srv)
		a.srv.Restart()
		if l := logSince(a.srv, mark); strings.Contains(l, "short read") {
			t.Fatalf("the fixed AOF still loads as truncated; log:\n%s", l)
		}
		checkCleanLoad(t, a.srv, mark)
		checkLoaded(t)
		moreThenRestart(t)
	})
}

// Seed 000 §12 and seed 004 §8 "corrupted AOF rehearsal", part 2: a
// corruption in the middle of the incremental AOF (here a bulk header of a
// settings snapshot's SET). The rehearsed procedure:
//
//  1. The server refuses to start ("Bad file format reading the append only
//     file"): aof-load-truncated covers only a torn tail.
//  2. Copy appendonlydir/ aside; `redis-check-aof appendonlydir/appendonly.aof.manifest`
//     names the damaged file.
//  3. `redis-check-aof --fix <incr file>`, answer y: it cuts the file where
//     the damage begins, so every write from there on is lost, not only the
//     damaged one. Start the server.
//  4. What was lost is what Redis is only an accelerator for: an idempotency
//     record written after the damage replays from PostgreSQL (without running
//     the call again) and warms Redis; caches and limits fill again.
func TestResilienceCorruptAOFRefusedThenRepaired(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a := startACLInstance(t, "vm1")
	s := newVM1Stack(t, a, nil, ratelimit.DefaultPolicy())
	admin0, admin1 := a.adminDB(vm1.DB0), a.adminDB(vm1.DB1)
	writeRestartState(t, s)
	for v := int64(100); v < 105; v++ {
		if err := s.settings.Put(ctx, v, resilienceSettings{Limit: v}); err != nil {
			t.Fatal(err)
		}
	}
	kept0, kept1 := keyspaceOf(t, admin0), keyspaceOf(t, admin1)
	read := time.Now()

	damaged, _ := vm1.NewSettingsSnapshotKey(200)
	if err := s.settings.Put(ctx, 200, resilienceSettings{Limit: 200}); err != nil {
		t.Fatal(err)
	}
	late := idemtest.Request(t, vm1.IdemScopeDialogCreate, `{"title":"after the damage"}`)
	var calls idemtest.Counter
	lateOut, err := s.keeper.Do(ctx, late, calls.Call(late.Key, idemtest.Created(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.settings.Put(ctx, 300, resilienceSettings{Limit: 300}); err != nil {
		t.Fatal(err)
	}
	a.srv.Stop()

	file := incrAOF(t, a.srv.Dir)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	units, err := parseAOF(b)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(units, func(u aofUnit) bool { return u.mentions(damaged.String()) })
	if i < 0 || i == len(units)-1 {
		t.Fatalf("the snapshot's SET is not in the middle of the AOF (unit %d of %d)", i, len(units))
	}
	target := units[i]
	at := target.Start + int64(bytes.Index(b[target.Start:target.End], []byte(damaged.String()))) + int64(len(damaged.String())) + 2
	if b[at] != '$' {
		t.Fatalf("byte %d is %q, want the value's bulk header", at, b[at])
	}
	b[at] = '!'
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}

	// 1. Refused.
	if l := startRefused(t, a.srv); !strings.Contains(l, "Bad file format reading the append only file") {
		t.Fatalf("the refusal does not say why; log:\n%s", l)
	}
	// 2. Backup and diagnosis.
	aofDir := filepath.Join(a.srv.Dir, "appendonlydir")
	copyDir(t, aofDir, filepath.Join(t.TempDir(), "appendonlydir"))
	manifest := filepath.Join(aofDir, "appendonly.aof.manifest")
	if code, out := checkAOF(t, "", manifest); code == 0 || !strings.Contains(out, filepath.Base(file)) {
		t.Fatalf("redis-check-aof on the damaged AOF exits %d:\n%s", code, out)
	}
	// 3. Repair: the file ends where the damaged unit began.
	if code, out := checkAOF(t, "y\n", "--fix", file); code != 0 {
		t.Fatalf("redis-check-aof --fix exits %d:\n%s", code, out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != target.Start {
		t.Fatalf("after --fix the file is %v bytes (%v), want %d", fi.Size(), err, target.Start)
	}
	if code, out := checkAOF(t, "", manifest); code != 0 {
		t.Fatalf("after --fix redis-check-aof exits %d:\n%s", code, out)
	}
	mark := logMark(a.srv)
	a.srv.Restart()
	checkCleanLoad(t, a.srv, mark)
	elapsed := time.Since(read)
	compareAfterRestart(t, "db0", kept0, keyspaceOf(t, admin0), elapsed)
	compareAfterRestart(t, "db1", kept1, keyspaceOf(t, admin1), elapsed)
	for _, v := range []int64{200, 300} {
		if _, err := s.settings.Get(ctx, v); !errors.Is(err, settings.ErrNotFound) {
			t.Errorf("snapshot %d written after the damage: %v, want ErrNotFound", v, err)
		}
	}
	// 4. The idempotency record written after the damage is gone from Redis;
	// PostgreSQL answers, the call does not run again, and Redis is warmed.
	out, err := s.keeper.Do(ctx, late, calls.Call(late.Key, idemtest.Created(), nil))
	if err != nil || out.Source != idempotency.SourceDurable || !cmp.Equal(out.Response, lateOut.Response) {
		t.Errorf("the call completed after the damage: %+v %v, want its durable answer", out, err)
	}
	if out, err := s.keeper.Do(ctx, late, calls.Call(late.Key, idemtest.Created(), nil)); err != nil || out.Source != idempotency.SourceRedis {
		t.Errorf("the next retry: %+v %v, want the warmed Redis record", out, err)
	}
	if calls.Runs.Load() != 1 || s.sideEffects(t, late.Key) != 1 {
		t.Errorf("runs %d, side effects %d; want 1", calls.Runs.Load(), s.sideEffects(t, late.Key))
	}
	scripttest.AuditTTLs(t, admin0, vm1.Keys)
	scripttest.AuditTTLs(t, admin1, vm1.Keys)
}
