package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/elangtest"
	"github.com/hanchat/luagen/internal/logtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/elang/cache"
	"github.com/hanchat/luagen/services/elang/lock"
	"github.com/hanchat/luagen/services/elang/ratelimit"
	"github.com/hanchat/luagen/services/elang/session"
	"github.com/hanchat/luagen/services/elang/store"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/redis/go-redis/v9"
)

const (
	elangPassword       = "elang-app-test-password-5d2b"
	elangLoaderPassword = "elang-loader-test-password-8c1f"
)

// elangACL is what `luagen acl --instance elang --prefix p --password-file
// elang_app=FILE` prints, run as the built command.
func elangACL(t *testing.T, p elang.Prefix) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "luagen")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/luagen").CombinedOutput(); err != nil {
		t.Fatalf("go build luagen: %v\n%s", err, out)
	}
	pw, loaderPW := filepath.Join(dir, "pw"), filepath.Join(dir, "loader-pw")
	if err := os.WriteFile(pw, []byte(elangPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loaderPW, []byte(elangLoaderPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "acl", "--instance", "elang", "--prefix", p.String(), "--password-file", "elang_app="+pw,
		"--password-file", "elang_loader="+loaderPW, "--spec", "../keyspec.yaml", "--lua", "../lua")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("luagen acl: %v", err)
	}
	if strings.Contains(string(out), elangPassword) {
		t.Fatal("the aclfile holds the plain password")
	}
	return string(out)
}

type noRevocations struct{}

func (noRevocations) Revoked(context.Context, string) (bool, error) { return false, nil }

func elangClient(srv *redistest.Server, user, password string) *redis.Client {
	return srv.Client(elang.DB0, func(o *redis.Options) {
		o.Username, o.Password = user, password
		o.MaxRetries = -1
		o.ContextTimeoutEnabled = true
	})
}

// Two deployment prefixes on one server: under the aclfile luagen writes for
// prefix A, elang_app runs every Elang service on A (cache with its clear,
// locks, sessions, rate limits) and gets NOPERM for every key of prefix B and
// for every channel (elang declares none).
func TestElangACLForOnePrefixRefusesAnother(t *testing.T) {
	ctx := context.Background()
	pa, pb := elangtest.Deployment(t, "deploy-a"), elangtest.Deployment(t, "deploy-b")
	srv := redistest.Start(t, redistest.WithACL(elangACL(t, pa)+adminLine))
	// elang_app runs scripts but may not load them: it recovers NOSCRIPT
	// through the loader user (runtime.WithLoader), as a service holding the
	// loader's credential does.
	app := runtime.WithLoader(elangClient(srv, elang.ElangAppUser, elangPassword),
		elangClient(srv, "elang_loader", elangLoaderPassword), elang.AllScripts()...)
	admin := elangClient(srv, "luagen_test_admin", "admin-test-password")

	// Everything of A works as elang_app.
	stA, err := store.NewRedis(app, pa)
	if err != nil {
		t.Fatal(err)
	}
	c := cache.New(stA, cache.Options{})
	if err := c.Set(ctx, "catalog.version", []byte("4"), 300*time.Second); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := c.Get(ctx, "catalog.version"); !ok || string(v) != "4" {
		t.Fatalf("A's cache: %q %v", v, ok)
	}
	if _, err := c.Clear(ctx); err != nil {
		t.Fatalf("A's clear as elang_app: %v", err)
	}
	if _, ok, _ := c.Get(ctx, "catalog.version"); ok {
		t.Fatal("A's entry survived A's clear")
	}
	if ok, err := lock.New(stA, lock.Options{}).Lock("report:42", 30*time.Second).Acquire(ctx); err != nil || !ok {
		t.Fatalf("A's lock: %v %v", ok, err)
	}
	sessions, err := session.New(app, pa, testHMACKey, noRevocations{}, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sessions.Create(ctx, "user-1", []byte("b"))
	if err != nil {
		t.Fatalf("A's session: %v", err)
	}
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	key, _ := secrets.NewHMACKey([]byte("elang-test-secret-0123456789abcdef"))
	rl, err := ratelimit.New(app, pa, key, []ratelimit.Limit{{Name: "login", Algorithm: ratelimit.Sliding, Limit: 5, Window: time.Minute}}, ratelimit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := rl.Allow(ctx, "login", "alice"); err != nil || !d.Allowed {
		t.Fatalf("A's limiter: %+v %v", d, err)
	}

	// B's keys and channels: NOPERM, through the services and directly.
	stB, err := store.NewRedis(app, pb)
	if err != nil {
		t.Fatal(err)
	}
	if err := stB.Set(ctx, "catalog.version", []byte("5"), time.Minute); !strings.Contains(errString(err), "NOPERM") {
		t.Fatalf("B's cache set as A's user: %v", err)
	}
	if _, _, err := stB.Acquire(ctx, "report:42", "owner-eeeeeeeeeeeeeeee", time.Second); !strings.Contains(errString(err), "NOPERM") {
		t.Fatalf("B's lock as A's user: %v", err)
	}
	sessionsB, _ := session.New(app, pb, testHMACKey, noRevocations{}, session.Options{})
	if _, err := sessionsB.Create(ctx, "user-1", []byte("b")); !errors.Is(err, session.ErrUnavailable) || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("B's session as A's user: %v", err)
	}
	bKey, _ := elang.NewElangCacheKey(pb, "x")
	for _, args := range [][]any{
		{"get", bKey.String()},
		{"set", bKey.String(), "1"},
		{"unlink", bKey.String()},
		{"publish", pb.String() + "events:x", "hi"},
		{"flushdb"},
		{"keys", "*"},
	} {
		if err := app.Do(ctx, args...).Err(); !isNoPerm(err) {
			t.Errorf("%v as elang_app of A: %v, want NOPERM", args, err)
		}
	}
	// Elang declares no channel (its realtime events go through the outbox
	// stream), so elang_app has no Pub/Sub at all: SUBSCRIBE of B's channel and
	// of A's own, PSUBSCRIBE and PUBLISH are refused.
	for _, ch := range []string{pb.String() + "events:x", pa.String() + "events:x"} {
		sub := app.Subscribe(ctx, ch)
		if _, err := sub.Receive(ctx); !isNoPerm(err) {
			t.Fatalf("SUBSCRIBE %s: %v", ch, err)
		}
		_ = sub.Close()
		if err := app.Publish(ctx, ch, "x").Err(); !isNoPerm(err) {
			t.Fatalf("PUBLISH %s: %v", ch, err)
		}
	}
	subAll := app.PSubscribe(ctx, "*")
	if _, err := subAll.Receive(ctx); !isNoPerm(err) {
		t.Fatalf("PSUBSCRIBE *: %v", err)
	}
	_ = subAll.Close()

	// Nothing of A reached B's namespace, and nothing is outside a prefix.
	for _, k := range admin.Keys(ctx, "*").Val() {
		if !strings.HasPrefix(k, pa.String()) {
			t.Errorf("key %q outside A's prefix", k)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Changing the deployment prefix ends the sessions and starts new cache and
// limiter namespaces; the old prefix's data is left to its TTLs, never flushed.
// The prefix is APP_URL's by default, ELANG_REDIS_PREFIX's when set.
func TestElangPrefixChangeStartsNewNamespaces(t *testing.T) {
	ctx := context.Background()
	t.Setenv(elang.PrefixEnv, "")
	t.Setenv(elang.PrefixDefaultFrom, "https://Shop.Example.com/eu/")
	fromURL, err := elang.PrefixFromEnv()
	if err != nil || fromURL.String() != "shop.example.com:eu:" {
		t.Fatalf("prefix from APP_URL: %q %v", fromURL, err)
	}
	t.Setenv(elang.PrefixEnv, "acme:production:")
	explicit, err := elang.PrefixFromEnv()
	if err != nil || explicit.String() != "acme:production:" {
		t.Fatalf("explicit prefix: %q %v", explicit, err)
	}
	oldP, err := explicit.Test()
	if err != nil || oldP.String() != "test:acme:production:" {
		t.Fatalf("test prefix: %q %v", oldP, err)
	}
	newP, _ := elang.NewPrefix("acme:production-2:")
	newP, _ = newP.Test()

	srv := redistest.Start(t)
	rdb := srv.Client(elang.DB0, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	key, _ := secrets.NewHMACKey([]byte("elang-test-secret-0123456789abcdef"))
	limits := []ratelimit.Limit{{Name: "login", Algorithm: ratelimit.Fixed, Limit: 3, Window: time.Minute}}
	type services struct {
		c  *cache.Cache
		s  *session.Sessions
		rl *ratelimit.Limiter
	}
	open := func(p elang.Prefix) services {
		st, err := store.NewRedis(rdb, p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := session.New(rdb, p, testHMACKey, noRevocations{}, session.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rl, err := ratelimit.New(rdb, p, key, limits, ratelimit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return services{cache.New(st, cache.Options{}), s, rl}
	}
	old := open(oldP)
	if err := old.c.Set(ctx, "catalog.version", []byte("4"), 300*time.Second); err != nil {
		t.Fatal(err)
	}
	sess, err := old.s.Create(ctx, "user-1", []byte("cart"))
	if err != nil {
		t.Fatal(err)
	}
	_ = sess.Release(ctx)
	for i := 0; i < 3; i++ {
		_, _ = old.rl.Allow(ctx, "login", "alice")
	}
	if d, _ := old.rl.Allow(ctx, "login", "alice"); d.Allowed {
		t.Fatal("the old limit is not exhausted")
	}
	before := srv.Admin().DBSize(ctx).Val()

	// The deployment restarts with a new prefix.
	cur := open(newP)
	if _, ok, _ := cur.c.Get(ctx, "catalog.version"); ok {
		t.Fatal("the new prefix sees the old cache")
	}
	if _, err := cur.s.Open(ctx, sess.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("the old session under the new prefix: %v", err)
	}
	if d, err := cur.rl.Allow(ctx, "login", "alice"); err != nil || !d.Allowed || d.Remaining != 2 {
		t.Fatalf("the new limiter namespace: %+v %v", d, err)
	}
	if n, err := cur.c.Clear(ctx); err != nil || n != 0 {
		t.Fatalf("the new prefix's clear removed %d (%v)", n, err)
	}
	// The old namespace is untouched (left to its TTLs).
	if v, ok, _ := old.c.Get(ctx, "catalog.version"); !ok || string(v) != "4" {
		t.Fatal("the new prefix's clear touched the old cache")
	}
	if after := srv.Admin().DBSize(ctx).Val(); after != before+2 {
		t.Fatalf("keys %d -> %d, want only the new limiter bucket and the new prefix's cache generation added", before, after)
	}
}

// The Redis password of ELANG_REDIS_URL never reaches an error or a log line
// of the Elang services: with the wrong password (WRONGPASS) and with the
// server stopped, every service fails and says why without it.
func TestElangSecretsAbsentFromErrorsAndLogs(t *testing.T) {
	ctx := context.Background()
	p := elangtest.Deployment(t, "secrets")
	srv := redistest.Start(t, redistest.WithACL(elangACL(t, p)+adminLine))
	key, _ := secrets.NewHMACKey([]byte("elang-test-secret-0123456789abcdef"))
	for _, tc := range []struct {
		name, password string
		stop           bool
	}{
		{"wrong password", "not-the-password-41c9", false},
		{"server stopped", elangPassword, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := srv.URL(elang.ElangAppUser, tc.password, elang.DB0)
			log, rec := logtest.New()
			st, err := store.Open(url, "", p)
			if err != nil {
				t.Fatal(err)
			}
			o, _ := redis.ParseURL(url)
			o.MaxRetries = -1
			rdb := redis.NewClient(o)
			defer rdb.Close()
			if tc.stop {
				srv.Stop()
			}
			var errs []error
			c := cache.New(st, cache.Options{Logger: log})
			if _, ok, err := c.Get(ctx, "catalog.version"); ok || err != nil {
				t.Fatalf("get: %v %v, want a miss", ok, err)
			}
			errs = append(errs, c.Set(ctx, "catalog.version", []byte("4"), time.Minute))
			_, err = lock.New(st, lock.Options{Logger: log}).Lock("report:42", time.Second).Acquire(ctx)
			errs = append(errs, err)
			ss, _ := session.New(rdb, p, testHMACKey, noRevocations{}, session.Options{Logger: log})
			_, err = ss.Create(ctx, "user-1", []byte("b"))
			errs = append(errs, err)
			rl, _ := ratelimit.New(rdb, p, key, []ratelimit.Limit{{Name: "login", Algorithm: ratelimit.Fixed, Limit: 1, Window: time.Second}}, ratelimit.Options{Logger: log})
			_, err = rl.Allow(ctx, "login", "alice")
			errs = append(errs, err)
			for i, err := range errs {
				if err == nil {
					t.Fatalf("call %d succeeded", i)
				}
				if strings.Contains(err.Error(), tc.password) {
					t.Errorf("error %d holds the password: %v", i, err)
				}
			}
			recs := rec.Records("")
			if len(recs) < 5 {
				t.Fatalf("%d log records, want one per failure (5)", len(recs))
			}
			for _, r := range recs {
				if strings.Contains(r.Line(), tc.password) {
					t.Errorf("log line holds the password: %s", r.Line())
				}
			}
		})
	}
}

// Two deployments whose prefixes the tool derives one inside the other
// (https://shop.example.com/ and https://shop.example.com/eu: shop.example.com:
// and shop.example.com:eu:) share nothing under the first one's aclfile: its
// elang_app gets NOPERM for every key the second wrote (session, lock, cache,
// rate limit, stream) and for the second's sessions through the service
// (issue 21: ~shop.example.com:* read and wrote them).
func TestElangNestedPrefixesShareNothing(t *testing.T) {
	ctx := context.Background()
	pa, err := elang.PrefixFromURL("https://shop.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := elang.PrefixFromURL("https://shop.example.com/eu")
	if err != nil {
		t.Fatal(err)
	}
	if pa.String() != "shop.example.com:" || pb.String() != "shop.example.com:eu:" {
		t.Fatalf("prefixes %q %q", pa, pb)
	}
	srv := redistest.Start(t, redistest.WithACL(elangACL(t, pa)+adminLine))
	app := runtime.WithLoader(elangClient(srv, elang.ElangAppUser, elangPassword),
		elangClient(srv, "elang_loader", elangLoaderPassword), elang.AllScripts()...)
	admin := elangClient(srv, "luagen_test_admin", "admin-test-password")

	// Deployment B writes one of each of its keys (as the admin here).
	sessionsB, err := session.New(admin, pb, testHMACKey, noRevocations{}, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sessionsB.Create(ctx, "user-b", []byte("b's cart"))
	if err != nil {
		t.Fatal(err)
	}
	stB, _ := store.NewRedis(admin, pb)
	if err := stB.Set(ctx, "catalog.version", []byte("b"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := stB.Acquire(ctx, "report:42", "owner-bbbbbbbbbbbbbbbb", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	rlB, _ := ratelimit.New(admin, pb, testHMACKey, []ratelimit.Limit{{Name: "login", Algorithm: ratelimit.Fixed, Limit: 5, Window: time.Minute}}, ratelimit.Options{})
	if _, err := rlB.Allow(ctx, "login", "bob"); err != nil {
		t.Fatal(err)
	}
	keysB := admin.Keys(ctx, pb.String()+"*").Val()
	if len(keysB) < 4 {
		t.Fatalf("B wrote %v", keysB)
	}

	// A's user reaches none of them.
	for _, k := range keysB {
		for _, cmd := range [][]any{{"type", k}, {"pttl", k}, {"get", k}, {"hget", k, "body"}, {"del", k}, {"unlink", k}, {"set", k, "x"}} {
			if err := app.Do(ctx, cmd...).Err(); !isNoPerm(err) {
				t.Errorf("%v as A's elang_app: %v, want NOPERM", cmd, err)
			}
		}
	}
	sessionsViaA, _ := session.New(app, pb, testHMACKey, noRevocations{}, session.Options{})
	if _, err := sessionsViaA.Open(ctx, sb.ID); !errors.Is(err, session.ErrUnavailable) || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("B's session opened with A's user: %v, want NOPERM", err)
	}
	// And A's own work goes on.
	stA, _ := store.NewRedis(app, pa)
	if err := stA.Set(ctx, "catalog.version", []byte("a"), time.Minute); err != nil {
		t.Fatalf("A's own cache: %v", err)
	}
}

// No key name holds a bearer secret, and no application user of a server that
// hosts several deployments can learn another deployment's key names (issue 21:
// elang_app held SCAN for the cache clear, SCAN ignores ACL key patterns, and
// acme:staging:session:<id>:data carried the session id itself, a bearer
// token: a session hijack). Deployment B creates a session; under A's aclfile,
// elang_app gets NOPERM for every command that lists names (SCAN, KEYS,
// RANDOMKEY, DBSIZE, PUBSUB, CLIENT LIST, INFO, MONITOR, ...), ACL GETUSER shows
// it holds none of them, and B's session id is in no key name at all. A's
// cache clear works without them.
func TestElangUserCannotLearnAnotherDeploymentsKeyNames(t *testing.T) {
	ctx := context.Background()
	pa, pb := elangtest.Deployment(t, "acme-production"), elangtest.Deployment(t, "acme-staging")
	srv := redistest.Start(t, redistest.WithACL(elangACL(t, pa)+adminLine))
	app := runtime.WithLoader(elangClient(srv, elang.ElangAppUser, elangPassword),
		elangClient(srv, "elang_loader", elangLoaderPassword), elang.AllScripts()...)
	admin := elangClient(srv, "luagen_test_admin", "admin-test-password")

	sessionsB, err := newSessions(admin, pb)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sessionsB.Create(ctx, "user-b", []byte("b's cart"))
	if err != nil {
		t.Fatal(err)
	}
	_ = sb.Release(ctx)
	for _, k := range admin.Keys(ctx, "*").Val() {
		if strings.Contains(k, sb.ID) {
			t.Errorf("key %q holds the session id (a bearer token)", k)
		}
	}
	if again, err := sessionsB.Open(ctx, sb.ID); err != nil || string(again.Body) != "b's cart" {
		t.Fatalf("B's session by its id: %+v %v", again, err)
	}

	for _, cmd := range [][]any{
		{"scan", 0}, {"scan", 0, "match", "*"}, {"scan", 0, "type", "hash"}, {"keys", "*"}, {"randomkey"}, {"dbsize"},
		{"pubsub", "channels"}, {"pubsub", "shardchannels"}, {"pubsub", "numpat"}, {"client", "list"}, {"client", "info"},
		{"info", "keyspace"}, {"memory", "stats"}, {"monitor"}, {"debug", "object", pb.String() + "x"},
		{"sort", pa.String() + "cache:x", "by", "*"}, {"object", "help"}, {"cluster", "getkeysinslot", 0, 10},
		{"xinfo", "help"}, {"slowlog", "get"}, {"latency", "latest"}, {"acl", "log"}, {"command", "getkeys", "get", "x"},
	} {
		v, err := app.Do(ctx, cmd...).Result()
		// DEBUG is refused before the ACL is asked (enable-debug-command no).
		if !isNoPerm(err) && !(cmd[0] == "debug" && err != nil && strings.Contains(err.Error(), "DEBUG command not allowed")) {
			t.Errorf("%v as A's elang_app: %v %v, want NOPERM", cmd, v, err)
		}
	}
	for _, c := range strings.Fields(aclRule(t, admin, elang.ElangAppUser, "commands")) {
		if c == "+scan" || c == "+keys" || c == "+randomkey" || c == "+dbsize" || strings.HasPrefix(c, "+pubsub") || strings.HasPrefix(c, "+@") {
			t.Errorf("elang_app holds %s", c)
		}
	}

	// A's cache clear needs none of them.
	stA, _ := store.NewRedis(app, pa)
	c := cache.New(stA, cache.Options{})
	if err := c.Set(ctx, "catalog.version", []byte("4"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clear(ctx); err != nil {
		t.Fatalf("A's clear: %v", err)
	}
	if _, ok, _ := c.Get(ctx, "catalog.version"); ok {
		t.Fatal("the entry survived A's clear")
	}
	if calls := redistest.CommandCalls(t, admin, "scan") + redistest.CommandCalls(t, admin, "keys"); calls != 1 { // the test's own KEYS above
		t.Fatalf("SCAN/KEYS ran %d times, want only the test's own KEYS", calls)
	}
}

// newSessions is the session store of prefix p on rdb, keyed by testHMACKey.
func newSessions(rdb redis.Scripter, p elang.Prefix) (*session.Sessions, error) {
	return session.New(rdb, p, testHMACKey, noRevocations{}, session.Options{})
}

// aclRule is one field of ACL GETUSER user ("commands", "keys", "flags", ...)
// as text, whichever protocol the client speaks.
func aclRule(t *testing.T, admin *redis.Client, user, field string) string {
	t.Helper()
	v, err := admin.Do(context.Background(), "acl", "getuser", user).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got any
	switch v := v.(type) {
	case map[any]any:
		got = v[field]
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			if v[i] == field {
				got = v[i+1]
			}
		}
	}
	switch g := got.(type) {
	case string:
		return g
	case []any:
		parts := make([]string, len(g))
		for i, x := range g {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, " ")
	}
	t.Fatalf("ACL GETUSER %s: no %s in %v", user, field, v)
	return ""
}
