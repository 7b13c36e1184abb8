package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// The users a generated aclfile has (gen/acl): the application user runs
// scripts and may not load them, the loader loads and does nothing else.
const loaderACL = "user default on nopass ~* &* +@all\n" +
	"user app on >app-pass ~n* resetchannels -@all +ping +evalsha +incrby\n" +
	"user app_loader on >loader-pass resetchannels -@all +ping +script|load\n"

func loaderServer(t *testing.T) (srv *redistest.Server, app, loader *redis.Client) {
	srv = redistest.Start(t, redistest.WithACL(loaderACL))
	app = srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "app", "app-pass" })
	loader = srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "app_loader", "loader-pass" })
	return srv, app, loader
}

// Without a loader, an application user that may not SCRIPT LOAD cannot recover
// NOSCRIPT: the call fails with NOPERM, and no code is loaded.
func TestRunWithoutLoaderCannotLoad(t *testing.T) {
	ctx := context.Background()
	srv, app, _ := loaderServer(t)
	s := mustScript(t, "incr", incrSrc, false)
	_, err := s.Run(ctx, app, []string{"n"}, 1)
	if !errors.Is(err, runtime.ErrorCode("NOPERM")) {
		t.Fatalf("err = %v, want NOPERM", err)
	}
	if n := redistest.CommandCalls(t, srv.Admin(), "script|load"); n != 0 {
		t.Fatalf("script|load ran %d times, want 0", n)
	}
}

// WithLoader: NOSCRIPT recovery (Run and Batch) and Preload load through the
// loader user, and only the scripts declared to it.
func TestWithLoader(t *testing.T) {
	ctx := context.Background()
	srv, app, loader := loaderServer(t)
	s := mustScript(t, "incr", incrSrc, false)
	other := mustScript(t, "other", "return redis.call('INCRBY', KEYS[1], 100)", false)
	runtime.WithLoader(app, loader, s)

	for i := int64(1); i <= 3; i++ {
		if err := srv.Admin().ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		v, err := s.Run(ctx, app, []string{"n"}, 1)
		if err != nil || v != i {
			t.Fatalf("call %d: %v %v", i, v, err)
		}
	}
	if n := redistest.CommandCalls(t, srv.Admin(), "script|load"); n != 3 {
		t.Fatalf("script|load ran %d times, want 3 (one per flush)", n)
	}

	// A batch recovers through the loader too.
	if err := srv.Admin().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var b runtime.Batch
	p := runtime.Queue(&b, callOf(s, "n", 10), func(v any) (int64, error) { return v.(int64), nil })
	if err := b.Exec(ctx, app); err != nil {
		t.Fatal(err)
	}
	if v, err := p.Result(); err != nil || v != 13 {
		t.Fatalf("batch: %v %v", v, err)
	}

	// A script not declared to the loader is refused before Redis sees it.
	before := redistest.CommandCalls(t, srv.Admin(), "script|load")
	_, err := other.Run(ctx, app, []string{"n"})
	if !errors.Is(err, runtime.ErrUndeclaredScript) {
		t.Fatalf("undeclared script: %v, want ErrUndeclaredScript", err)
	}
	if err := app.ScriptLoad(ctx, "while true do end").Err(); !errors.Is(err, runtime.ErrUndeclaredScript) {
		t.Fatalf("SCRIPT LOAD of a loop through the app client: %v", err)
	}
	if n := redistest.CommandCalls(t, srv.Admin(), "script|load"); n != before {
		t.Fatalf("undeclared sources reached the server: script|load %d -> %d", before, n)
	}

	// Preload through the application client loads as the loader.
	if err := srv.Admin().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := runtime.Preload(ctx, app, s); err != nil {
		t.Fatal(err)
	}
	if ok, err := srv.Admin().ScriptExists(ctx, s.SHA1()).Result(); err != nil || !ok[0] {
		t.Fatalf("after Preload: exists %v %v", ok, err)
	}

	// The loader's own errors carry no credential.
	bad := srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "app_loader", "wrong-loader-secret" })
	app2 := srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "app", "app-pass" })
	runtime.WithLoader(app2, bad, s)
	if err := srv.Admin().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(ctx, app2, []string{"n"}, 1)
	if err == nil || strings.Contains(err.Error(), "wrong-loader-secret") || !strings.Contains(err.Error(), "loader") {
		t.Fatalf("a loader that cannot log in: %v", err)
	}
}

// A SCRIPT LOAD sent with Do (a *redis.Cmd) goes through the loader too.
func TestWithLoaderRedirectsDo(t *testing.T) {
	ctx := context.Background()
	srv, app, loader := loaderServer(t)
	s := mustScript(t, "incr", incrSrc, false)
	runtime.WithLoader(app, loader, s)
	v, err := app.Do(ctx, "SCRIPT", "LOAD", incrSrc).Result()
	if err != nil || v != s.SHA1() {
		t.Fatalf("Do SCRIPT LOAD: %v %v", v, err)
	}
	if n := redistest.CommandCalls(t, srv.Admin(), "script|load"); n != 1 {
		t.Fatalf("script|load calls %d, want 1", n)
	}
	if err := app.Do(ctx, "script", "load", "return 2").Err(); !errors.Is(err, runtime.ErrUndeclaredScript) {
		t.Fatalf("Do of an undeclared source: %v", err)
	}
}
