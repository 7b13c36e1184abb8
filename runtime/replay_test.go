package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// logSrc records each run of the script: one list entry per execution.
const logSrc = "redis.call('RPUSH', KEYS[1], ARGV[1]) return 1"

// A script not declared safe to replay is never sent twice, however its
// connections die: 50 callers on a plain client (go-redis's default of 3
// retries) and on an auto-pipeliner, while CLIENT KILL drops every client
// connection over and over. The script logs each execution, so the server's
// effects are counted exactly: every call answered ran once, every call whose
// outcome is unknown ran at most once, every other failure never ran.
func TestScriptsNotReplaySafeRunAtMostOnceWhenConnectionsDie(t *testing.T) {
	redistest.Need(t)
	srv := redistest.Start(t)
	logScript := mustScript(t, "log", logSrc, false)
	if logScript.Replayable() {
		t.Fatal("a script without ReplaySafe is replayable")
	}
	for _, mode := range []string{"client", "auto-pipeline"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			c := srv.Client(0, func(o *redis.Options) { o.PoolSize = 60; o.MaxRetries = 3 })
			admin := srv.Client(0)
			var client redis.Scripter = c
			if mode == "auto-pipeline" {
				ap, err := runtime.AutoPipeline(c, nil)
				if err != nil {
					t.Fatal(err)
				}
				client = ap
			}
			db, err := runtime.Bind(client, "t db0", 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := runtime.Preload(ctx, c, logScript); err != nil {
				t.Fatal(err)
			}
			logKey := "log:" + mode
			const callers, kills = 50, 30
			var answered, unknown, failed sync.Map
			var done atomic.Int64
			stop := make(chan struct{})
			killed := make(chan struct{})
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
						in.Key("log", logKey)
						in.String("id", id, 64)
						_, err := runtime.Run(ctx, db, in, func(v any) (int64, error) { return v.(int64), nil })
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

			runs := map[string]int{}
			entries, err := admin.LRange(ctx, logKey, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range entries {
				runs[id]++
			}
			count := func(m *sync.Map) (n int) { m.Range(func(any, any) bool { n++; return true }); return }
			t.Logf("%d calls answered, %d of unknown outcome (%d of them ran), %d failed before sending; %d executions logged; %d CLIENT KILLs",
				count(&answered), count(&unknown), func() (n int) {
					unknown.Range(func(k, _ any) bool { n += runs[k.(string)]; return true })
					return
				}(), count(&failed), len(entries), kills)
			for id, n := range runs {
				if n > 1 {
					t.Errorf("call %s ran %d times: it was sent again", id, n)
				}
			}
			answered.Range(func(k, _ any) bool {
				if runs[k.(string)] != 1 {
					t.Errorf("call %s was answered but ran %d times", k, runs[k.(string)])
				}
				return true
			})
			failed.Range(func(k, v any) bool {
				if runs[k.(string)] != 0 {
					t.Errorf("call %s failed with %v (not an unknown outcome) but ran", k, v)
				}
				return true
			})
			for id := range runs {
				_, a := answered.Load(id)
				_, u := unknown.Load(id)
				if !a && !u {
					t.Errorf("call %s ran but its caller was told it did not", id)
				}
			}
			if count(&unknown) == 0 {
				t.Errorf("no call met a killed connection: the test did not exercise anything")
			}
		})
	}
}

// The error replies by which a server refuses a call without running it may
// be sent again whatever the script; everything else may not.
func TestNotRun(t *testing.T) {
	for err, want := range map[error]bool{
		errors.New("TRYAGAIN Multiple keys request during rehashing of slot"):                true,
		errors.New("LOADING Redis is loading the dataset in memory"):                         true,
		errors.New("CLUSTERDOWN The cluster is down"):                                        true,
		errors.New("ERR max number of clients reached"):                                      true,
		&runtime.ScriptError{Script: "s", Code: "TRYAGAIN", Message: "TRYAGAIN rehashing"}:   true,
		&runtime.ScriptError{Script: "s", Code: "NOT_OWNER", Message: "NOT_OWNER not yours"}: false,
		&runtime.OutcomeUnknownError{Script: "s", Err: errors.New("read: connection reset")}: false,
		errors.New("ERR Error running script: TRYAGAIN inside a message"):                    false,
		nil: false,
	} {
		if got := runtime.NotRun(err); got != want {
			t.Errorf("NotRun(%v) = %v, want %v", err, got, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runtime.RetryWait(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("RetryWait on an ended context: %v", err)
	}
}
