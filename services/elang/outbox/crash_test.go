package outbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Environment of the relay child process TestRelayKilledBetweenAppendAndMark starts.
const (
	childEnv       = "ELANG_OUTBOX_CRASH_CHILD" // set: run as the child
	childSchemaEnv = "ELANG_OUTBOX_CRASH_SCHEMA"
	childRedisEnv  = "ELANG_OUTBOX_CRASH_REDIS"
	childPrefixEnv = "ELANG_OUTBOX_CRASH_PREFIX"
	childBatchEnv  = "ELANG_OUTBOX_CRASH_BATCH"
)

// TestMain runs the relay child process of TestRelayKilledBetweenAppendAndMark
// when the test binary is started as that child, and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		err := relayCrashChild()
		fmt.Fprintln(os.Stderr, "relay child:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// relayCrashChild is the child process of TestRelayKilledBetweenAppendAndMark:
// it runs one relay pass whose appends Redis accepts, says so on stdout and
// blocks before the SQL mark until its parent kills it with SIGKILL. It returns
// only on a failure, or when the pass was not blocked (a bug).
func relayCrashChild() error {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = os.Getenv(childSchemaEnv)
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(childRedisEnv), DB: elang.DB0})
	// The parent's test prefix: its deployment prefix, made a test prefix again.
	p, err := elang.NewPrefix(strings.TrimPrefix(os.Getenv(childPrefixEnv), "test:"))
	if err == nil {
		p, err = p.Test()
	}
	if err != nil {
		return err
	}
	scripts, err := elang.NewScripts(elang.Clients{DB0: rdb}, elang.WithPrefix(p))
	if err != nil {
		return err
	}
	batch, _ := strconv.Atoi(os.Getenv(childBatchEnv))
	r := NewRelay(db, rdb, scripts, p, Options{Batch: batch})
	r.afterAppend = func(ctx context.Context, appended int) {
		fmt.Printf("APPENDED %d\n", appended)
		_ = os.Stdout.Sync()
		time.Sleep(time.Hour) // the parent's SIGKILL ends the process here, before the mark
	}
	_, err = r.Dispatch(ctx)
	return fmt.Errorf("the pass returned (%v): the hook should have blocked it", err)
}

// A relay process killed with SIGKILL after Redis accepted its appends and before
// its SQL mark leaves the rows pending; the relay started again appends none of
// them twice (each dedupe key answers the first entry's id, which the mark then
// records) and publishes the rest once.
func TestRelayKilledBetweenAppendAndMark(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, "orders", 250)
	var schema string
	if err := e.db.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1", childSchemaEnv+"="+schema, childRedisEnv+"="+e.srv.Addr,
		childPrefixEnv+"="+e.prefix.String(), childBatchEnv+"=100")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "APPENDED ") {
				lines <- sc.Text()
				return
			}
		}
		close(lines)
	}()
	var line string
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the child relay ended without reaching the window between XADD and the mark")
		}
		line = l
	case <-time.After(30 * time.Second):
		t.Fatal("the child relay did not reach the window between XADD and the mark within 30 s")
	}
	if line != "APPENDED 100" {
		t.Fatalf("child: %q, want APPENDED 100", line)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL", err)
	}
	if n := len(e.entries(t)); n != 100 {
		t.Fatalf("%d entries after the crash, want the 100 the child appended", n)
	}
	// Its transaction died with it: nothing was marked. (The next relay waits on
	// the advisory lock until PostgreSQL has ended the dead backend's transaction.)
	if n := e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL"); n != 250 {
		t.Fatalf("%d rows pending after the crash, want all 250", n)
	}
	total, err := e.relay(Options{Batch: 100}).Drain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if total.Appended != 150 || total.Deduplicated != 100 {
		t.Fatalf("restarted relay: %+v, want 150 appended and the child's 100 deduplicated", total)
	}
	checkOnceInOrder(t, e, "orders", 250)
}

// The same window ended by cancelling the relay's context instead of killing its
// process: the mark fails with the context, the rows stay pending, and the next
// relay appends none twice.
func TestRelayCancelledBetweenAppendAndMark(t *testing.T) {
	e := newEnv(t)
	e.publish(t, "orders", 250)
	ctx, cancel := context.WithCancel(context.Background())
	r := e.relay(Options{Batch: 100})
	r.afterAppend = func(context.Context, int) { cancel() }
	if _, err := r.Dispatch(ctx); err == nil {
		t.Fatal("a pass cancelled before its mark reported success")
	}
	if n := len(e.entries(t)); n != 100 {
		t.Fatalf("%d entries after the cancelled pass, want 100", n)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL"); n != 250 {
		t.Fatalf("%d rows pending after the cancelled pass, want 250", n)
	}
	// Work stopped the same way returns nil (a clean stop) and marks nothing either.
	ctx2, cancel2 := context.WithCancel(context.Background())
	w := e.relay(Options{Batch: 100})
	w.afterAppend = func(context.Context, int) { cancel2() }
	if err := w.Work(ctx2); err != nil {
		t.Fatalf("Work after cancellation: %v, want nil", err)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL"); n != 250 {
		t.Fatalf("%d rows pending after the cancelled Work, want 250", n)
	}
	total, err := e.relay(Options{Batch: 100}).Drain(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if total.Appended != 150 || total.Deduplicated != 100 {
		t.Fatalf("restarted relay: %+v, want 150 appended and 100 deduplicated", total)
	}
	checkOnceInOrder(t, e, "orders", 250)
}

// checkOnceInOrder: the stream holds exactly events 1..n of channel, once each, in
// order, and every SQL row is marked with the id of its entry.
func checkOnceInOrder(t *testing.T, e *env, channel string, n int) {
	t.Helper()
	ents := e.entries(t)
	if len(ents) != n {
		t.Fatalf("%d stream entries, want %d", len(ents), n)
	}
	byMsg := map[string]string{}
	for i, en := range ents {
		if en.channel != channel || en.ref != int64(i+1) {
			t.Fatalf("entry %d: %+v, want event %d of %s", i, en, i+1, channel)
		}
		byMsg[en.messageID] = en.id
	}
	rows, err := e.db.Query(context.Background(), "SELECT message_id::text, coalesce(stream_id, '') FROM elang_outbox")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	marked := 0
	for rows.Next() {
		var m, sid string
		if err := rows.Scan(&m, &sid); err != nil {
			t.Fatal(err)
		}
		if byMsg[m] != sid {
			t.Fatalf("row %s marked with stream id %q, its entry is %q", m, sid, byMsg[m])
		}
		marked++
	}
	if marked != n {
		t.Fatalf("%d rows, want %d", marked, n)
	}
}
