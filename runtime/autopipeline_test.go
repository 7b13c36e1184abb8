package runtime_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// run calls s with one key and one increment through runtime.Run.
func run(ctx context.Context, db runtime.DB, s *runtime.Script, key string) (int64, error) {
	return runtime.Run(ctx, db, callOf(s, key, 1), func(v any) (int64, error) { return v.(int64), nil })
}

func TestAutoPipelineDatabaseIsChecked(t *testing.T) {
	redistest.Need(t)
	srv := redistest.Start(t)
	db1 := srv.Client(1)
	bare, err := db1.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Bind(bare, "t db0", 0, nil); !errors.Is(err, runtime.ErrUncheckedDB) {
		t.Fatalf("a bare AutoPipeliner: %v, want ErrUncheckedDB", err)
	}
	ap, err := runtime.AutoPipeline(db1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Bind(ap, "t db0", 0, nil); !errors.Is(err, runtime.ErrWrongDB) {
		t.Fatalf("the auto-pipeliner of a DB1 client as DB0: %v, want ErrWrongDB", err)
	}
	if _, err := runtime.Bind(ap, "t db1", 1, nil); err != nil {
		t.Fatalf("the auto-pipeliner of a DB1 client as DB1: %v", err)
	}
	if ap.AutoPipeliner != bare {
		t.Fatal("runtime.AutoPipeline made a second auto-pipeliner for the client")
	}
}

// A context that has ended before the call sends nothing, on a plain client
// and on an auto-pipeliner (whose own Process would still run it).
func TestEndedContextSendsNothing(t *testing.T) {
	redistest.Need(t)
	srv := redistest.Start(t)
	c := srv.Client(0)
	ap, err := runtime.AutoPipeline(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	incr := mustScript(t, "incr", incrSrc, false)
	if err := runtime.Preload(context.Background(), c, incr); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for name, client := range map[string]redis.Scripter{"client": c, "auto-pipeline": ap} {
		db, err := runtime.Bind(client, "t db0", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		for ctxName, ctx := range map[string]context.Context{"cancelled": cancelled, "expired": expired} {
			_, err := run(ctx, db, incr, "n")
			if !errors.Is(err, ctx.Err()) || errors.Is(err, runtime.ErrOutcomeUnknown) {
				t.Errorf("%s, %s context: %v, want its error (not sent, so not an unknown outcome)", name, ctxName, err)
			}
		}
	}
	if n, err := c.Exists(context.Background(), "n").Result(); err != nil || n != 0 {
		t.Fatalf("a call with an ended context ran: EXISTS n = %d %v", n, err)
	}
}

// A deadline returns on time while the server is busy (paused for 2 s): the
// auto-pipeliner would wait for its batch. The call, still queued, may run
// later; the caller was told its outcome is unknown.
func TestAutoPipelineDeadlineReturnsWhileTheServerIsBusy(t *testing.T) {
	redistest.Need(t)
	srv := redistest.Start(t)
	c := srv.Client(0)
	admin := srv.Client(0)
	ap, err := runtime.AutoPipeline(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	incr := mustScript(t, "incr", incrSrc, false)
	bg := context.Background()
	if err := runtime.Preload(bg, c, incr); err != nil {
		t.Fatal(err)
	}
	db, err := runtime.Bind(ap, "t db0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	const pause = 2 * time.Second
	if err := admin.Do(bg, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	_, err = run(ctx, db, incr, "n")
	returned := time.Since(paused)
	if !errors.Is(err, runtime.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a deadline while the server is busy: %v, want ErrOutcomeUnknown and DeadlineExceeded", err)
	}
	if returned >= pause {
		t.Fatalf("the call returned after %v, when the server's pause of %v was over", returned, pause)
	}
	// The queued call runs once the server answers again: the outcome was indeed unknown.
	if !redistest.WaitFor(bg, 10*time.Second, func() bool { v, _ := c.Get(bg, "n").Int(); return v == 1 }) {
		t.Fatal("the queued call never ran")
	}
}

// NOSCRIPT inside an auto-pipeline: 50 callers through one auto-pipeliner
// while SCRIPT FLUSH runs 20 times; every call succeeds and runs exactly once.
func TestAutoPipelineRecoversNOSCRIPTUnderLoad(t *testing.T) {
	redistest.Need(t)
	srv := redistest.Start(t)
	c := srv.Client(0, func(o *redis.Options) { o.PoolSize = 60 })
	admin := srv.Client(0)
	ap, err := runtime.AutoPipeline(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	incr := mustScript(t, "incr", incrSrc, false)
	db, err := runtime.Bind(ap, "t db0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const callers, flushes, minCalls = 50, 20, 50
	var calls, failed atomic.Int64
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for i := 0; i < flushes; i++ {
			// Each flush comes after the callers have made progress.
			before := calls.Load()
			if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return calls.Load() >= before+callers }) {
				t.Error("the callers stopped making progress")
				return
			}
			if err := admin.ScriptFlush(ctx).Err(); err != nil {
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
				case <-flushed:
					if i >= minCalls {
						return
					}
				default:
				}
				if _, err := run(ctx, db, incr, "n"); err != nil {
					failed.Add(1)
					t.Errorf("call: %v", err)
					return
				}
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d callers failed", failed.Load())
	}
	if n, err := c.Get(ctx, "n").Int64(); err != nil || n != calls.Load() {
		t.Fatalf("n = %d %v, want %d: every call ran exactly once", n, err, calls.Load())
	}
	t.Logf("%d calls, %d SCRIPT FLUSHes, %d SCRIPT LOADs", calls.Load(), flushes, redistest.CommandCalls(t, admin, "script|load"))
}

// After SCRIPT FLUSH, 50 callers who meet NOSCRIPT together send one SCRIPT
// LOAD between them, not one each.
func TestNOSCRIPTHerdLoadsOnce(t *testing.T) {
	redistest.Need(t)
	srv := redistest.Start(t)
	c := srv.Client(0, func(o *redis.Options) { o.PoolSize = 60 })
	admin := srv.Client(0)
	ctx := context.Background()
	incr := mustScript(t, "incr", incrSrc, false)
	ap, err := runtime.AutoPipeline(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := runtime.Bind(ap, "t db0", 0, nil)
	if err != nil {
		t.Fatal(err)
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
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < callers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := run(ctx, db, incr, "n"); err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		evals := redistest.CommandCalls(t, admin, "evalsha")
		loads := redistest.CommandCalls(t, admin, "script|load")
		noscript := evals - callers // every NOSCRIPT reply is followed by one more EVALSHA
		t.Logf("round %d: %d callers, %d met NOSCRIPT, %d SCRIPT LOADs", round, callers, noscript, loads)
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
		t.Fatalf("%d callers met NOSCRIPT and sent %d SCRIPT LOADs; want them to share loads (at most one per 5)", herd, herdLoads)
	}
}
