package tests

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/serverconf"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Issue 12, on servers started from the generated aclfile and config: who may
// load code, who may stop it, and which databases exist.

// appUsers are the application users of the HAN instances.
var appUsers = map[string]string{"vm1": "api_backend", "vm2": "message_safety"}

const (
	busyLoop     = "while true do end"
	functionCode = "#!lua name=evil\nredis.register_function('spin', function() while true do end end)"
)

// An application user runs the declared scripts and loads no code of its own:
// SCRIPT LOAD, EVAL, EVAL_RO, FUNCTION LOAD, FCALL, SCRIPT FLUSH, SCRIPT KILL and
// FUNCTION KILL are refused. The loader loads and does nothing else; the
// operator kills and does nothing else. (Before: the application users had
// script|load, so SCRIPT LOAD of a busy loop and EVALSHA of it stopped the
// instance for every client.)
func TestCodeLoadingIsNotTheApplicationsRight(t *testing.T) {
	t.Parallel()
	for _, instance := range []string{"vm1", "vm2"} {
		t.Run(instance, func(t *testing.T) {
			ctx := context.Background()
			a := startACLInstance(t, instance)
			app := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = appUsers[instance], aclPasswords[appUsers[instance]] })
			loaderName, operatorName := acl.LoaderUser(a.in), acl.OperatorUser(a.in)
			loader := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = loaderName, aclPasswords[loaderName] })
			operator := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = operatorName, aclPasswords[operatorName] })
			key := a.spec.KeysOf(a.in)[0].Pattern.Example()

			for _, cmd := range [][]any{
				{"script", "load", busyLoop},
				{"eval", busyLoop, "0"},
				{"eval_ro", "return 1", "0"},
				{"function", "load", functionCode},
				{"function", "load", "replace", functionCode},
				{"fcall", "spin", "0"},
				{"script", "flush"},
				{"script", "kill"},
				{"function", "kill"},
				{"function", "flush"},
				{"function", "restore", "x"},
			} {
				if err := app.Do(ctx, cmd...).Err(); !isNoPerm(err) {
					t.Errorf("%s %v: %v, want NOPERM", appUsers[instance], cmd, err)
				}
			}
			for _, cmd := range [][]any{
				{"eval", "return 1", "0"}, {"evalsha", strings.Repeat("0", 40), "0"}, {"get", key}, {"set", key, "v"},
				{"function", "load", functionCode}, {"script", "kill"}, {"script", "flush"}, {"select", "1"},
			} {
				if err := loader.Do(ctx, cmd...).Err(); !isNoPerm(err) {
					t.Errorf("%s %v: %v, want NOPERM", loaderName, cmd, err)
				}
			}
			for _, cmd := range [][]any{
				{"eval", "return 1", "0"}, {"script", "load", "return 1"}, {"get", key}, {"set", key, "v"},
				{"function", "load", functionCode}, {"script", "flush"}, {"config", "get", "*"}, {"shutdown"},
			} {
				if err := operator.Do(ctx, cmd...).Err(); !isNoPerm(err) {
					t.Errorf("%s %v: %v, want NOPERM", operatorName, cmd, err)
				}
			}
			// The loader loads (the deploy step); the script cache then holds only
			// what it loaded.
			if err := loader.ScriptLoad(ctx, "return 1").Err(); err != nil {
				t.Errorf("%s SCRIPT LOAD: %v", loaderName, err)
			}
			if n := redistest.CommandCalls(t, a.admin, "script|load"); n != 1 {
				t.Errorf("script|load calls: %d, want the loader's 1", n)
			}
		})
	}
}

// A script stuck in a loop makes the server answer BUSY after the generated
// busy-reply-threshold; the generated operator user kills it, no other
// generated user can, and the application's calls work again. (Before: no
// generated user could SCRIPT KILL, and the threshold was Redis's 5 s default.)
func TestOperatorKillsABusyScript(t *testing.T) {
	t.Parallel()
	for _, instance := range []string{"vm1", "vm2"} {
		t.Run(instance, func(t *testing.T) {
			ctx := context.Background()
			a := startACLInstance(t, instance)
			if got := a.admin.ConfigGet(ctx, "busy-reply-threshold").Val()["busy-reply-threshold"]; got != strconv.Itoa(serverconf.BusyReplyThresholdMS) {
				t.Fatalf("busy-reply-threshold %q, want the generated %d", got, serverconf.BusyReplyThresholdMS)
			}
			user := appUsers[instance]
			app := a.client(t, user, 0)
			loaderName, operatorName := acl.LoaderUser(a.in), acl.OperatorUser(a.in)

			// A script that never returns, as a bug in a reviewed script would be;
			// only the test's admin user can run it.
			spin := a.srv.Client(0, admin, func(o *redis.Options) { o.ReadTimeout = 30 * time.Second; o.MaxRetries = -1 })
			spun := make(chan error, 1)
			go func() { spun <- spin.Eval(ctx, busyLoop, nil).Err() }()

			probe := a.srv.Client(0, func(o *redis.Options) {
				o.Username, o.Password = user, aclPasswords[user]
				o.MaxRetries = -1
			})
			if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
				err := probe.Ping(ctx).Err()
				return err != nil && strings.HasPrefix(err.Error(), "BUSY")
			}) {
				t.Fatal("the server never answered BUSY")
			}
			for _, name := range []string{user, loaderName} {
				c := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = name, aclPasswords[name]; o.MaxRetries = -1 })
				if err := c.ScriptKill(ctx).Err(); err == nil {
					t.Errorf("%s killed the script", name)
				}
			}
			select {
			case err := <-spun:
				t.Fatalf("the loop ended before the operator killed it: %v", err)
			default:
			}
			operator := a.srv.Client(0, func(o *redis.Options) {
				o.Username, o.Password = operatorName, aclPasswords[operatorName]
				o.MaxRetries = -1
			})
			if err := operator.ScriptKill(ctx).Err(); err != nil {
				t.Fatalf("%s SCRIPT KILL: %v", operatorName, err)
			}
			select {
			case err := <-spun:
				if err == nil || !strings.Contains(err.Error(), "killed") {
					t.Fatalf("the loop's call: %v, want killed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the loop still runs after SCRIPT KILL")
			}
			if err := app.Ping(ctx).Err(); err != nil {
				t.Fatalf("after the kill: %v", err)
			}
			// The operator kills only when something runs.
			if err := operator.ScriptKill(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOTBUSY") {
				t.Fatalf("SCRIPT KILL with nothing running: %v, want NOTBUSY", err)
			}
		})
	}
}

// The generated config has exactly the databases the spec declares, so no key
// lands in a database no audit or cutover looks at. (Before: 16 databases, and
// api_backend, whose key patterns hold in every database, wrote han:api:* into
// databases 3 and 15.)
func TestKeysCannotLandInUndeclaredDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for instance, want := range map[string]int{"vm1": 3, "vm2": 1} {
		a := startACLInstance(t, instance)
		if got := a.admin.ConfigGet(ctx, "databases").Val()["databases"]; got != strconv.Itoa(want) {
			t.Errorf("%s: databases %q, want %d", instance, got, want)
		}
		user := appUsers[instance]
		key := a.spec.KeysOf(a.in)[0].Pattern.Example()
		for _, db := range []int{want, 15} {
			c := a.srv.Client(db, func(o *redis.Options) { o.Username, o.Password = user, aclPasswords[user]; o.MaxRetries = -1 })
			err := c.Set(ctx, key, "x", time.Minute).Err()
			if err == nil {
				t.Errorf("%s: %s wrote %s into db %d", instance, user, key, db)
				continue
			}
			if instance == "vm1" && !strings.Contains(err.Error(), "DB index is out of range") {
				t.Errorf("%s: db %d: %v, want out of range", instance, db, err)
			}
			// The admin cannot reach it either: it does not exist.
			if err := a.srv.Client(db, admin).Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "DB index is out of range") {
				t.Errorf("%s: db %d as admin: %v, want out of range", instance, db, err)
			}
		}
		for _, cmd := range [][]any{{"swapdb", "0", "1"}, {"move", key, "1"}, {"copy", key, key + "x", "db", "1"}} {
			c := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = user, aclPasswords[user] })
			if err := c.Do(ctx, cmd...).Err(); !isNoPerm(err) {
				t.Errorf("%s: %s %v: %v, want NOPERM", instance, user, cmd, err)
			}
		}
	}
}
