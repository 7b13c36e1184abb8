package tests

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/functions"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
	app "github.com/hanchat/luagen/gen/testdata/features/functions/golden/app"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// Functions mode (issue 12) on servers started from the generated aclfile and
// config of gen/testdata/features/functions, whose generated package is
// app (gen's golden output, compiled and checked by gen's tests).

const functionsDir = "../gen/testdata/features/functions"

var fnPasswords = map[string]string{
	"app":          "functions-app-test-password",
	"app_loader":   "functions-loader-test-password",
	"app_operator": "functions-operator-test-password",
}

// functionsServer starts a server from the feature spec's generated files;
// extra directives follow the generated config.
func functionsServer(t *testing.T, extra ...string) *redistest.Server {
	t.Helper()
	spec, err := keyspec.Load(functionsDir + "/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := spec.Instance("app")
	srcs, err := compiler.Load(spec, os.DirFS(functionsDir+"/lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for u, pw := range fnPasswords {
		if hashes[u], err = acl.HashPassword([]byte(pw)); err != nil {
			t.Fatal(err)
		}
	}
	users, _, err := acl.Derive(spec, in, srcs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	return redistest.Start(t,
		redistest.WithACL(acl.Render(users)+adminLine),
		redistest.WithConfigFor(func(port int, dir string) []string {
			conf, err := serverconf.Render(spec, in, serverconf.Options{Bind: "127.0.0.1", Port: port, ACLFile: redistest.ACLPath(dir)})
			if err != nil {
				t.Fatal(err)
			}
			return append(strings.Split(conf, "\n"), extra...)
		}))
}

func fnClient(srv *redistest.Server, user string) *redis.Client {
	return srv.Client(0, func(o *redis.Options) { o.Username, o.Password = user, fnPasswords[user]; o.MaxRetries = -1 })
}

func hitsKey(t *testing.T, page string) app.HitsKey {
	k, err := app.NewHitsKey(page)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The deploy step loads the library as the loader user and checks its version;
// the wrappers run it with FCALL/FCALL_RO as the application user, which can
// neither load nor run other code; a missing library, or one of another version,
// is a typed error and the wrapper loads nothing.
func TestFunctionsMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := functionsServer(t)
	admin0 := srv.Client(0, admin)
	loader, user := fnClient(srv, "app_loader"), fnClient(srv, "app")
	scripts, err := app.NewScripts(app.Clients{DB0: user})
	if err != nil {
		t.Fatal(err)
	}
	page := hitsKey(t, "home")

	// Before the deploy step: typed errors, nothing loaded.
	if _, err := scripts.HitsIncr(ctx, page, app.HitsIncrArgs{By: 1}); !errors.Is(err, runtime.ErrNoFunction) {
		t.Fatalf("before the deploy: %v, want ErrNoFunction", err)
	}
	if _, err := runtime.VerifyLibrary(ctx, user, app.Library); !errors.Is(err, runtime.ErrNoFunction) {
		t.Fatalf("VerifyLibrary before the deploy: %v", err)
	}
	if n := admin0.FunctionList(ctx, redis.FunctionListQuery{}).Val(); len(n) != 0 {
		t.Fatalf("a wrapper loaded code: %v", n)
	}

	// The application user cannot load the library, nor anything else.
	if _, err := runtime.LoadLibrary(ctx, user, app.Library); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("LoadLibrary as the application user: %v, want NOPERM", err)
	}
	for _, cmd := range [][]any{
		{"function", "load", "replace", app.Library.Source}, {"function", "delete", "app"}, {"function", "flush"},
		{"function", "restore", "x"}, {"function", "kill"}, {"script", "load", "return 1"}, {"eval", "return 1", "0"},
		{"evalsha", strings.Repeat("0", 40), "0"}, {"script", "kill"},
	} {
		if err := user.Do(ctx, cmd...).Err(); !isNoPerm(err) {
			t.Errorf("app %v: %v, want NOPERM", cmd[:2], err)
		}
	}
	// The loader cannot touch keys or run any code (issue 21: its FCALL_RO, for
	// the version check, ran any no-writes function, one it had just loaded too).
	if _, err := loader.FCall(ctx, app.HitsIncrScript.Function(), []string{page.String()}, 1).Result(); !isNoPerm(err) {
		t.Errorf("loader FCALL: %v, want NOPERM", err)
	}
	if err := loader.FunctionLoad(ctx, "#!lua name=loaders_own\nredis.register_function{function_name='loaders_own', flags={'no-writes'}, callback=function() return 1 end}").Err(); err != nil {
		t.Fatalf("the loader's FUNCTION LOAD: %v", err)
	}
	for _, cmd := range [][]any{
		{"fcall_ro", "loaders_own", 0}, {"fcall", "loaders_own", 0},
		{"fcall_ro", "app_version", 0}, {"fcall", "app_version", 0},
		{"fcall_ro", app.HitsPeekScript.Function(), 0},
	} {
		if err := loader.Do(ctx, cmd...).Err(); !isNoPerm(err) {
			t.Errorf("loader %v: %v, want NOPERM", cmd, err)
		}
	}
	if err := admin0.FunctionDelete(ctx, "loaders_own").Err(); err != nil {
		t.Fatal(err)
	}

	r, err := runtime.LoadLibrary(ctx, loader, app.Library)
	if err != nil || len(r.Nodes) != 1 || r.Nodes[0].Version != app.Library.Version {
		t.Fatalf("LoadLibrary: %+v %v", r, err)
	}
	for i := int64(1); i <= 3; i++ {
		if n, err := scripts.HitsIncr(ctx, page, app.HitsIncrArgs{By: 2}); err != nil || n != 2*i {
			t.Fatalf("HitsIncr %d: %d %v", i, n, err)
		}
	}
	if n, err := scripts.HitsPeek(ctx, page); err != nil || n != 6 {
		t.Fatalf("HitsPeek: %d %v", n, err)
	}
	// The version checks read FUNCTION LIST; the only FCALL_RO that ran is HitsPeek's.
	if calls := redistest.CommandCalls(t, admin0, "fcall_ro"); calls != 1 {
		t.Fatalf("fcall_ro calls: %d, want 1 (HitsPeek; no version check runs code)", calls)
	}
	if calls := redistest.CommandCalls(t, admin0, "function|list"); calls < 2 { // VerifyLibrary, LoadLibrary
		t.Fatalf("function|list calls: %d", calls)
	}
	if calls := redistest.CommandCalls(t, admin0, "evalsha"); calls != 0 {
		t.Fatalf("evalsha calls: %d, want 0 in functions mode", calls)
	}
	// A read-only function refuses writes (no-writes), as EVALSHA_RO did.
	if err := user.Do(ctx, "fcall_ro", app.HitsIncrScript.Function(), 1, page.String(), 1).Err(); err == nil {
		t.Fatal("FCALL_RO of a writing function was accepted")
	}

	// Another version of the library on the server: its changed function has
	// another name, so the wrapper answers ErrNoFunction; an unchanged one runs.
	older := strings.ReplaceAll(app.Library.Source, app.HitsIncrScript.Function(), "app_hits_incr_00000000")
	older = strings.ReplaceAll(older, app.Library.Version, "0000")
	if err := admin0.FunctionLoadReplace(ctx, older).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := scripts.HitsIncr(ctx, page, app.HitsIncrArgs{By: 1}); !errors.Is(err, runtime.ErrNoFunction) || !strings.Contains(err.Error(), "hits_incr") {
		t.Fatalf("against another version: %v, want ErrNoFunction naming the script", err)
	}
	if n, err := scripts.HitsPeek(ctx, page); err != nil || n != 6 {
		t.Fatalf("an unchanged function of another version: %d %v", n, err)
	}
	if _, err := runtime.VerifyLibrary(ctx, user, app.Library); !errors.Is(err, runtime.ErrLibraryVersion) {
		t.Fatalf("VerifyLibrary of another version: %v, want ErrLibraryVersion", err)
	}
	// The deploy step puts the right one back.
	if _, err := runtime.LoadLibrary(ctx, loader, app.Library); err != nil {
		t.Fatal(err)
	}
	if n, err := scripts.HitsIncr(ctx, page, app.HitsIncrArgs{By: 1}); err != nil || n != 7 {
		t.Fatalf("after the redeploy: %d %v", n, err)
	}
	// runtime.Preload refuses a functions-mode script instead of loading it.
	if err := runtime.Preload(ctx, loader, app.AllScripts()...); !errors.Is(err, runtime.ErrFunctionsMode) {
		t.Fatalf("Preload: %v, want ErrFunctionsMode", err)
	}
}

// Functions persist and replicate: a replica that took over serves the same
// library to the same wrappers, and a restarted server (AOF) still has it. The
// EVALSHA mode's script cache has neither.
func TestFunctionsSurviveFailoverAndRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := functionsServer(t, "repl-diskless-sync-delay 0")
	replica := functionsServer(t, "replicaof 127.0.0.1 "+strings.Split(primary.Addr, ":")[1], "masteruser luagen_test_admin", "masterauth admin-test-password")
	page := hitsKey(t, "failover")

	if _, err := runtime.LoadLibrary(ctx, fnClient(primary, "app_loader"), app.Library); err != nil {
		t.Fatal(err)
	}
	onPrimary, _ := app.NewScripts(app.Clients{DB0: fnClient(primary, "app")})
	if n, err := onPrimary.HitsIncr(ctx, page, app.HitsIncrArgs{By: 5}); err != nil || n != 5 {
		t.Fatalf("on the primary: %d %v", n, err)
	}
	replicaAdmin := replica.Client(0, admin)
	if !redistest.WaitFor(ctx, 15*time.Second, func() bool {
		v, err := replicaAdmin.Get(ctx, page.String()).Result()
		return err == nil && v == "5"
	}) {
		t.Fatal("the replica never caught up")
	}

	// The primary dies; the replica takes over. Nobody loads anything.
	primary.Kill()
	if err := replicaAdmin.Do(ctx, "replicaof", "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	onReplica, _ := app.NewScripts(app.Clients{DB0: fnClient(replica, "app")})
	if n, err := onReplica.HitsIncr(ctx, page, app.HitsIncrArgs{By: 1}); err != nil || n != 6 {
		t.Fatalf("on the promoted replica: %d %v", n, err)
	}
	if _, err := runtime.VerifyLibrary(ctx, fnClient(replica, "app"), app.Library); err != nil {
		t.Fatalf("the promoted replica's library: %v", err)
	}

	// A restart with AOF (the spec's persistence) keeps the library too.
	// (Redis refuses to shut down while it writes the initial AOF the sync started.)
	if !redistest.WaitFor(ctx, 15*time.Second, func() bool {
		info := replicaAdmin.Info(ctx, "persistence").Val()
		return strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0")
	}) {
		t.Fatal("the AOF rewrite never ended")
	}
	replica.Stop()
	replica.Restart()
	again, _ := app.NewScripts(app.Clients{DB0: fnClient(replica, "app")})
	if n, err := again.HitsPeek(ctx, page); err != nil || n != 6 {
		t.Fatalf("after a restart: %d %v", n, err)
	}
}

// A function stuck in a loop is ended by the operator user's FUNCTION KILL.
func TestOperatorKillsABusyFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := functionsServer(t)
	admin0 := srv.Client(0, admin, func(o *redis.Options) { o.ReadTimeout = 30 * time.Second; o.MaxRetries = -1 })
	if err := admin0.FunctionLoad(ctx, "#!lua name=spin\nredis.register_function{function_name='spin', flags={'no-writes'}, callback=function() while true do end end}").Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- admin0.FCallRO(ctx, "spin", nil).Err() }()
	probe := fnClient(srv, "app")
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		err := probe.Ping(ctx).Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY")
	}) {
		t.Fatal("the server never answered BUSY")
	}
	if err := probe.Do(ctx, "function", "kill").Err(); err == nil {
		t.Fatal("the application user killed the function")
	}
	if err := fnClient(srv, "app_operator").Do(ctx, "function", "kill").Err(); err != nil {
		t.Fatalf("FUNCTION KILL as app_operator: %v", err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("the function's call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the function still runs")
	}
}

// On Redis Cluster, LoadLibrary loads on every primary (a library is per node,
// not per slot), the replicas get it by replication, and after a manual
// failover the promoted replica serves the wrappers with nothing loaded again.
func TestFunctionsOnClusterSurviveFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartClusterWith(t, redistest.ClusterConfig{Primaries: 3, Replicas: 1})
	cc := cl.Client(t)
	r, err := runtime.LoadLibrary(ctx, cc, app.Library)
	if err != nil || len(r.Nodes) != 3 {
		t.Fatalf("LoadLibrary on the cluster: %+v %v", r, err)
	}
	for _, n := range r.Nodes {
		if n.Version != app.Library.Version {
			t.Fatalf("%s answers %q", n.Addr, n.Version)
		}
	}
	scripts, err := app.NewScripts(app.Clients{DB0: cc})
	if err != nil {
		t.Fatal(err)
	}
	page := hitsKey(t, "cluster")
	if n, err := scripts.HitsIncr(ctx, page, app.HitsIncrArgs{By: 3}); err != nil || n != 3 {
		t.Fatalf("on the cluster: %d %v", n, err)
	}
	slot := int(cc.ClusterKeySlot(ctx, page.String()).Val())
	primary, err := cl.PrimaryOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := cl.ReplicasOf(ctx, primary)
	if err != nil || len(replicas) == 0 {
		t.Fatalf("replicas of %s: %v %v", primary.Addr, replicas, err)
	}
	if !redistest.WaitFor(ctx, 15*time.Second, func() bool {
		libs, err := replicas[0].Admin().FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "app"}).Result()
		return err == nil && len(libs) == 1
	}) {
		t.Fatal("the replica never got the library")
	}
	if err := cl.Failover(ctx, replicas[0]); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitConverged(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// A fresh client finds the promoted replica as the key's primary.
	after, _ := app.NewScripts(app.Clients{DB0: cl.Client(t)})
	if n, err := after.HitsIncr(ctx, page, app.HitsIncrArgs{By: 1}); err != nil || n != 4 {
		t.Fatalf("after the failover: %d %v", n, err)
	}
	if now, err := cl.PrimaryOf(ctx, slot); err != nil || now != replicas[0] {
		t.Fatalf("the key's primary after the failover: %v %v, want the promoted replica %s", now, err, replicas[0].Addr)
	}
}

// A top-level '...' (the script's own arguments in EVAL, empty there) is legal
// Lua for EVALSHA, but in functions mode the script becomes the body of
// function(KEYS, ARGV), where Lua refuses it: FUNCTION LOAD of the whole
// library fails, every function of the instance with it (issue 21). In
// functions mode luagen refuses such a script at file:line; in evalsha mode it
// still accepts it.
func TestFunctionsModeRefusesTopLevelVarargs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw, err := os.ReadFile(functionsDir + "/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lua := fstest.MapFS{}
	for _, name := range []string{"hits_incr", "hits_peek"} {
		b, err := os.ReadFile(functionsDir + "/lua/app/" + name + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		lua["app/"+name+".lua"] = &fstest.MapFile{Data: b}
	}
	// The second line of hits_incr counts the script's varargs.
	incr := string(lua["app/hits_incr.lua"].Data)
	lua["app/hits_incr.lua"] = &fstest.MapFile{Data: []byte(strings.Replace(incr, "\n", "\nlocal extra = select('#', ...)\n", 1))}

	// In evalsha mode the script is fine, and a library built from it is what
	// functions mode would load: a real FUNCTION LOAD refuses all of it.
	evalSpec, err := keyspec.Parse("keyspec.yaml", []byte(strings.Replace(string(raw), "    mode: functions\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(evalSpec, lua, "lua")
	if err != nil {
		t.Fatalf("evalsha mode refuses the script: %v", err)
	}
	lib, err := functions.Build(evalSpec, evalSpec.Instance("app"), srcs)
	if err != nil {
		t.Fatal(err)
	}
	srv := functionsServer(t)
	admin0 := srv.Client(0, admin)
	if err := admin0.FunctionLoadReplace(ctx, lib.Source).Err(); err == nil || !strings.Contains(err.Error(), "'...'") {
		t.Fatalf("FUNCTION LOAD of the library: %v, want Lua's refusal of '...'", err)
	}
	if libs := admin0.FunctionList(ctx, redis.FunctionListQuery{}).Val(); len(libs) != 0 {
		t.Fatalf("after the refused load the server holds %v", libs)
	}
	// As an EVAL script the same Lua runs.
	if err := admin0.Eval(ctx, string(srcs["hits_incr"].Src), []string{"app:hits:evalsha"}, 1).Err(); err != nil {
		t.Fatalf("the script under EVAL: %v", err)
	}

	// In functions mode luagen refuses it at its file and line, before any
	// library is built.
	fnSpec, err := keyspec.Parse("keyspec.yaml", raw)
	if err != nil {
		t.Fatal(err)
	}
	_, err = compiler.Load(fnSpec, lua, "lua")
	if err == nil || !strings.Contains(err.Error(), "lua/app/hits_incr.lua:2:") || !strings.Contains(err.Error(), "FUNCTION LOAD") {
		t.Fatalf("functions mode: %v, want an error at lua/app/hits_incr.lua:2 naming FUNCTION LOAD", err)
	}
}
