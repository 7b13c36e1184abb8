package tests

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// aclPasswords are test-only passwords; the aclfile holds only their SHA-256.
var aclPasswords = map[string]string{
	"api_backend":    "api-backend-test-password-7f3c",
	"message_safety": "message-safety-test-password-9a1e",
	"vm1_loader":     "vm1-loader-test-password-5b2d",
	"vm1_operator":   "vm1-operator-test-password-0c4f",
	"vm2_loader":     "vm2-loader-test-password-8e6a",
	"vm2_operator":   "vm2-operator-test-password-3d7b",
	"vm1_monitor":    "vm1-monitor-test-password-2a9f",
	"vm2_monitor":    "vm2-monitor-test-password-6c1e",
}

// adminLine is a test-only user the tests use for ACL DRYRUN; production has none.
const adminLine = "user luagen_test_admin on >admin-test-password ~* &* +@all\n"

type aclInstance struct {
	spec  *keyspec.Spec
	in    *keyspec.Instance
	srcs  map[string]*compiler.Source
	acl   string
	srv   *redistest.Server
	admin *redis.Client
}

// startACLInstance starts a redis-server with the generated aclfile and the
// generated hardened config of one instance (port, bind and aclfile path are the
// test's own; everything else is as generated). extra directives are written
// after the config, so they win (e.g. a small maxmemory, which the spec leaves
// to the load profile, or loglevel).
func startACLInstance(t *testing.T, instance string, extra ...string) *aclInstance {
	t.Helper()
	spec, err := keyspec.Load("../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := spec.Instance(instance)
	srcs, err := compiler.Load(spec, os.DirFS("../lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for u, pw := range aclPasswords {
		if hashes[u], err = acl.HashPassword([]byte(pw + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	users, _, err := acl.Derive(spec, in, srcs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	a := &aclInstance{spec: spec, in: in, srcs: srcs, acl: acl.Render(users)}
	a.srv = redistest.Start(t,
		redistest.WithACL(a.acl+adminLine),
		redistest.WithConfigFor(func(port int, dir string) []string {
			conf, err := serverconf.Render(spec, in, serverconf.Options{Bind: "127.0.0.1", Port: port, ACLFile: redistest.ACLPath(dir)})
			if err != nil {
				t.Fatal(err)
			}
			return append(strings.Split(conf, "\n"), extra...)
		}))
	a.admin = a.srv.Client(0, admin)
	return a
}

func (a *aclInstance) client(t *testing.T, user string, db int) *redis.Client {
	return a.withLoader(t, a.srv.Client(db, func(o *redis.Options) { o.Username, o.Password = user, aclPasswords[user] }))
}

// withLoader makes an application user's client recover NOSCRIPT through the
// instance's loader user (runtime.WithLoader), as a service holding the loader
// credential does: the application user itself may not SCRIPT LOAD.
func (a *aclInstance) withLoader(t *testing.T, c *redis.Client) *redis.Client {
	name := acl.LoaderUser(a.in)
	loader := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = name, aclPasswords[name] })
	return runtime.WithLoader(c, loader, instanceScripts(a.in.Name)...)
}

// instanceScripts are the generated scripts of a HAN instance.
func instanceScripts(instance string) []*runtime.Script {
	switch instance {
	case "vm1":
		return vm1.AllScripts()
	case "vm2":
		return vm2.AllScripts()
	}
	return nil
}

// dryRunArgs are arguments that make each command a valid call, by command name;
// key positions are filled with the script's declared keys.
var dryRunArgs = map[string]func(keys []string) []any{
	"get": oneKey(), "del": oneKey(), "exists": oneKey(), "pttl": oneKey(), "pexpiretime": oneKey(), "zcard": oneKey(), "hgetall": oneKey(), "incr": oneKey(),
	"set": oneKey("v"), "hget": oneKey("f"), "hmget": oneKey("f"), "hset": oneKey("f", "v"), "hincrby": oneKey("f", 1),
	"incrby": oneKey(1), "pexpire": oneKey(1000), "zadd": oneKey(1, "m"), "zcount": oneKey(0, 1), "zrange": oneKey(0, 1),
	"zrem": oneKey("m"), "zremrangebyscore": oneKey(0, 1), "zscore": oneKey("m"), "time": func([]string) []any { return nil },
	"type": oneKey(), "decrby": oneKey(1),
}

func oneKey(rest ...any) func([]string) []any {
	return func(keys []string) []any { return append([]any{keys[0]}, rest...) }
}

func (a *aclInstance) dryRun(ctx context.Context, user string, args ...any) string {
	v, err := a.admin.Do(ctx, append([]any{"acl", "dryrun", user}, args...)...).Result()
	if err != nil {
		return err.Error()
	}
	return v.(string)
}

// ACL DRYRUN confirms that every command every script of the instance calls, on
// every key its KEYS positions accept, is allowed for the script's user.
func TestACLAllowsEveryScriptCommand(t *testing.T) {
	t.Parallel()
	for _, instance := range []string{"vm1", "vm2"} {
		t.Run(instance, func(t *testing.T) {
			ctx := context.Background()
			a := startACLInstance(t, instance)
			checked := 0
			for _, s := range a.spec.ScriptsOf(a.in) {
				user := s.DB.User.Name
				for _, pos := range s.Keys {
					for _, k := range pos.OneOf {
						if got := a.dryRun(ctx, user, evalCommand(s), s.LuaFile(), 1, k.Pattern.Example()); got != "OK" {
							t.Errorf("%s: %s on %s: %s", user, evalCommand(s), k.Name, got)
						}
					}
				}
				for _, c := range a.srcs[s.Name].Info.Calls {
					build, ok := dryRunArgs[c.Command]
					if !ok {
						t.Fatalf("%s calls %s: add it to dryRunArgs", s.Name, c.Command)
					}
					keyPositions := c.Keys
					if len(keyPositions) == 0 && c.Command != "time" {
						keyPositions = []int{1}
					}
					for _, kp := range keyPositions {
						for _, k := range s.Keys[kp-1].OneOf {
							args := append([]any{c.Command}, build([]string{k.Pattern.Example()})...)
							if got := a.dryRun(ctx, user, args...); got != "OK" {
								t.Errorf("%s (%s:%d): %v: %s", user, s.Name, c.Line, args, got)
							}
							checked++
						}
					}
					if c.Command == "time" {
						if got := a.dryRun(ctx, user, "time"); got != "OK" {
							t.Errorf("%s: TIME: %s", user, got)
						}
						checked++
					}
				}
			}
			if checked < 10 {
				t.Fatalf("only %d command checks ran", checked)
			}
		})
	}
}

func evalCommand(s *keyspec.Script) string {
	if s.ReadOnly {
		return "evalsha_ro"
	}
	return "evalsha"
}

// isNoPerm reports a NOPERM reply.
func isNoPerm(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOPERM") }

func TestACLRefusesWhatIsNotGranted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vm1 := startACLInstance(t, "vm1")
	vm2 := startACLInstance(t, "vm2")
	api := vm1.client(t, "api_backend", 0)
	safety := vm2.client(t, "message_safety", 0)
	if err := api.Ping(ctx).Err(); err != nil {
		t.Fatalf("api_backend cannot PING: %v", err)
	}
	if err := safety.Ping(ctx).Err(); err != nil {
		t.Fatalf("message_safety cannot PING: %v", err)
	}
	for name, tc := range map[string]struct {
		c   *redis.Client
		cmd []any
	}{
		"api_backend reads han:safety:*":            {api, []any{"get", "han:safety:text:x:y"}},
		"api_backend writes han:safety:*":           {api, []any{"set", "han:safety:dns:x:A", "1"}},
		"api_backend outside its prefixes":          {api, []any{"get", "other:key"}},
		"api_backend FLUSHALL":                      {api, []any{"flushall"}},
		"api_backend FLUSHDB":                       {api, []any{"flushdb"}},
		"api_backend CONFIG":                        {api, []any{"config", "get", "maxmemory"}},
		"api_backend KEYS":                          {api, []any{"keys", "*"}},
		"api_backend SCRIPT FLUSH":                  {api, []any{"script", "flush"}},
		"api_backend EVAL":                          {api, []any{"eval", "return 1", "0"}},
		"api_backend ACL":                           {api, []any{"acl", "whoami"}},
		"api_backend a command outside its list":    {api, []any{"lpush", "han:api:x", "1"}},
		"api_backend publishes on a safety channel": {api, []any{"publish", "han:safety:wakeup", "x"}},
		"message_safety reads han:api:*":            {safety, []any{"get", "han:api:idem:a:b:c"}},
		"message_safety reads han:rt:*":             {safety, []any{"hget", "han:rt:conn:x", "user_id"}},
		"message_safety SELECT":                     {safety, []any{"select", "1"}},
		"message_safety publishes on han:rt":        {safety, []any{"publish", "han:rt:user:x", "x"}},
		"message_safety FLUSHALL":                   {safety, []any{"flushall"}},
		"message_safety MONITOR":                    {safety, []any{"monitor"}},
		"message_safety SHUTDOWN":                   {safety, []any{"shutdown", "nosave"}},
	} {
		if err := tc.c.Do(ctx, tc.cmd...).Err(); !isNoPerm(err) {
			t.Errorf("%s: got %v, want NOPERM", name, err)
		}
	}
	// DEBUG is off for everyone (enable-debug-command no), and no user is granted it.
	if err := api.Do(ctx, "debug", "sleep", "0").Err(); err == nil {
		t.Error("api_backend ran DEBUG")
	}
	for _, a := range []*aclInstance{vm1, vm2} {
		for _, u := range a.spec.UsersOf(a.in) {
			for _, cmd := range [][]any{{"debug", "sleep", "0"}, {"flushall"}, {"keys", "*"}, {"config", "get", "x"}, {"monitor"}, {"script", "flush"}, {"acl", "list"}} {
				if got := a.dryRun(ctx, u.Name, cmd...); !strings.Contains(got, "no permissions") {
					t.Errorf("%s: ACL DRYRUN %v: %s", u.Name, cmd, got)
				}
			}
		}
	}
	// Subscribing outside the user's channels is refused too.
	sub := api.Subscribe(ctx, "han:safety:wakeup")
	defer sub.Close()
	if _, err := sub.Receive(ctx); !isNoPerm(err) {
		t.Errorf("api_backend SUBSCRIBE han:safety:wakeup: %v, want NOPERM", err)
	}
	own := safety.Subscribe(ctx, "han:safety:wakeup")
	defer own.Close()
	if _, err := own.Receive(ctx); err != nil {
		t.Errorf("message_safety SUBSCRIBE han:safety:wakeup: %v", err)
	}
}

func TestACLDefaultUserAndPasswords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startACLInstance(t, "vm1")
	for user, pw := range aclPasswords {
		if strings.Contains(a.acl, pw) {
			t.Fatalf("the aclfile holds %s's plain password", user)
		}
	}
	anon := a.srv.Client(0)
	if err := anon.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("a client without a user: %v, want NOAUTH", err)
	}
	def := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "default", "" })
	if err := def.Ping(ctx).Err(); err == nil {
		t.Fatal("the default user authenticated")
	}
	wrong := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "api_backend", "not-the-password" })
	if err := wrong.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("a wrong password: %v, want WRONGPASS", err)
	}
	// message_safety is not a user of vm1 at all.
	other := a.srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "message_safety", aclPasswords["message_safety"] })
	if err := other.Ping(ctx).Err(); err == nil {
		t.Fatal("a vm2 user authenticated on vm1")
	}
}

// CONTRADICTION 2: both VM1 URLs work under the generated ACL; /1 needs SELECT.
func TestACLBothVM1URLsConnect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startACLInstance(t, "vm1")
	for _, db := range []int{0, 1, 2} {
		opts, err := redis.ParseURL(a.srv.URL("api_backend", aclPasswords["api_backend"], db))
		if err != nil {
			t.Fatal(err)
		}
		opts.ClientName = "" // CLIENT SETNAME is not granted; go-redis sends none without a name
		c := redis.NewClient(opts)
		defer c.Close()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("api_backend through /%d: %v", db, err)
		}
		// The connection really is in that database.
		list, err := a.admin.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, " user=api_backend ") && strings.Contains(line, " db="+strconv.Itoa(db)+" ") {
				found = true
			}
		}
		if !found {
			t.Fatalf("no api_backend connection in db %d:\n%s", db, list)
		}
	}
}
