package runtime_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

func sha(src string) string {
	s := sha1.Sum([]byte(src))
	return hex.EncodeToString(s[:])
}

func mustScript(t *testing.T, name, src string, ro bool) *runtime.Script {
	t.Helper()
	s, err := runtime.NewScript(name, src, sha(src), ro)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const incrSrc = "return redis.call('INCRBY', KEYS[1], ARGV[1])"

func TestNewScriptRejectsWrongSHA(t *testing.T) {
	_, err := runtime.NewScript("x", incrSrc, strings.Repeat("0", 40), false)
	if !errors.Is(err, runtime.ErrSHAMismatch) {
		t.Fatalf("err = %v, want ErrSHAMismatch", err)
	}
}

func TestRunRecoversFromNOSCRIPTWithScriptLoad(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(0)
	s := mustScript(t, "incr", incrSrc, false)

	for round := 1; round <= 2; round++ {
		// Each round starts with an empty script cache: the first EVALSHA fails
		// with NOSCRIPT, the script is loaded once and the call retried once.
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		loadsBefore := redistest.CommandCalls(t, c, "script|load")
		for i := 1; i <= 3; i++ {
			v, err := s.Run(ctx, c, []string{"n"}, 1)
			if err != nil {
				t.Fatalf("round %d call %d: %v", round, i, err)
			}
			if v != int64((round-1)*3+i) {
				t.Fatalf("round %d call %d: got %v", round, i, v)
			}
		}
		if got := redistest.CommandCalls(t, c, "script|load") - loadsBefore; got != 1 {
			t.Fatalf("round %d: SCRIPT LOAD ran %d times, want 1", round, got)
		}
	}
	if n := redistest.CommandCalls(t, c, "eval"); n != 0 {
		t.Fatalf("EVAL ran %d times; the runtime must only EVALSHA and SCRIPT LOAD", n)
	}
}

func TestReadOnlyScriptRunsAsEVALSHA_RO(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(0)
	ro := mustScript(t, "get", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", true)
	c.Set(ctx, "k", "v", 0)
	v, err := ro.Run(ctx, c, []string{"k"})
	if err != nil || v != "v" {
		t.Fatalf("got %v, %v", v, err)
	}
	if redistest.CommandCalls(t, c, "evalsha_ro") != 2 { // NOSCRIPT, then the retry
		t.Fatalf("EVALSHA_RO calls = %d, want 2", redistest.CommandCalls(t, c, "evalsha_ro"))
	}
	// A missing key is a nil reply: (nil, nil), not redis.Nil.
	v, err = ro.Run(ctx, c, []string{"missing"})
	if err != nil || v != nil {
		t.Fatalf("nil reply: got %v, %v", v, err)
	}
	// A read-only script that writes is refused by Redis, and the refusal is typed.
	bad := mustScript(t, "bad", "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'x')", true)
	_, err = bad.Run(ctx, c, []string{"k"})
	if !errors.Is(err, runtime.ErrScriptReply) {
		t.Fatalf("write in a read-only script: %v", err)
	}
}

func TestErrorRepliesAreTypedAndCarryNoArguments(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(0)
	s := mustScript(t, "owner_check", "return redis.error_reply('NOT_OWNER the lock is not yours')", false)
	_, err := s.Run(ctx, c, []string{"secret-key-name"}, "secret-argument")
	var se *runtime.ScriptError
	if !errors.As(err, &se) || se.Code != "NOT_OWNER" || se.Script != "owner_check" {
		t.Fatalf("err = %#v", err)
	}
	if !errors.Is(err, runtime.ErrorCode("NOT_OWNER")) || errors.Is(err, runtime.ErrorCode("CONFLICT")) {
		t.Fatal("errors.Is does not match by code")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error shows a key or argument: %v", err)
	}
	// A Lua runtime error is an ERR reply.
	boom := mustScript(t, "boom", "return nil + 1", false)
	if _, err := boom.Run(ctx, c, nil); !errors.Is(err, runtime.ErrorCode("ERR")) {
		t.Fatalf("runtime error: %v", err)
	}
	// A network failure is not a script reply, and names the script.
	srv.Kill()
	_, err = s.Run(ctx, c, []string{"k"})
	if err == nil || errors.Is(err, runtime.ErrScriptReply) || !strings.Contains(err.Error(), "owner_check") {
		t.Fatalf("after the server died: %v", err)
	}
}

func TestPreloadLoadsEveryScript(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(0)
	a := mustScript(t, "a", "return 1", false)
	b := mustScript(t, "b", "return 2", false)
	if err := runtime.Preload(ctx, c, a, b); err != nil {
		t.Fatal(err)
	}
	exists, err := c.ScriptExists(ctx, a.SHA1(), b.SHA1()).Result()
	if err != nil || !exists[0] || !exists[1] {
		t.Fatalf("after Preload: %v, %v", exists, err)
	}
	if _, err := a.Run(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	if n := redistest.CommandCalls(t, c, "evalsha"); n != 1 {
		t.Fatalf("a preloaded script took %d EVALSHA calls, want 1", n)
	}
}

func TestBatchRecoversNOSCRIPTInsideThePipeline(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(0)
	incr := mustScript(t, "incr", incrSrc, false)
	fail := mustScript(t, "fail", "return redis.error_reply('CONFLICT no')", false)
	decodeInt := func(v any) (int64, error) { return v.(int64), nil }

	for round := 0; round < 2; round++ {
		c.ScriptFlush(ctx)
		b := &runtime.Batch{}
		var pending []*runtime.Pending[int64]
		for i := 0; i < 50; i++ {
			pending = append(pending, runtime.Queue(b, callOf(incr, "n", 1), decodeInt))
		}
		failed := runtime.Queue(b, callOf(fail, "n"), decodeInt)
		refused := runtime.Queue(b, callOf(incr, "n", -1), decodeInt)
		if _, err := pending[0].Result(); !errors.Is(err, runtime.ErrNotExecuted) {
			t.Fatalf("result before Exec: %v", err)
		}
		if err := b.Exec(ctx, c); err != nil {
			t.Fatal(err)
		}
		seen := map[int64]bool{}
		for i, p := range pending {
			v, err := p.Result()
			if err != nil {
				t.Fatalf("round %d call %d: %v (NOSCRIPT must not reach the caller)", round, i, err)
			}
			seen[v] = true
		}
		if len(seen) != 50 {
			t.Fatalf("round %d: %d distinct results, want 50", round, len(seen))
		}
		if _, err := failed.Result(); !errors.Is(err, runtime.ErrorCode("CONFLICT")) {
			t.Fatalf("error reply in a batch: %v", err)
		}
		if _, err := refused.Result(); !errors.Is(err, runtime.ErrInvalidArg) {
			t.Fatalf("refused input in a batch: %v", err)
		}
		if err := b.Exec(ctx, c); err == nil {
			t.Fatal("a batch ran twice")
		}
	}
	if n, _ := c.Get(ctx, "n").Int(); n != 100 {
		t.Fatalf("n = %d, want 100: every call ran exactly once", n)
	}
}

func TestCheckDB(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DB: 1})
	defer c.Close()
	if err := runtime.CheckDB(c, 1); err != nil {
		t.Fatal(err)
	}
	if err := runtime.CheckDB(c, 0); !errors.Is(err, runtime.ErrWrongDB) {
		t.Fatalf("err = %v, want ErrWrongDB", err)
	}
	if err := runtime.CheckDB(c.Pipeline(), 5); err != nil {
		t.Fatalf("a pipeline cannot tell its DB and must pass: %v", err)
	}
}
