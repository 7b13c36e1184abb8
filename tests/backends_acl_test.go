package tests

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	hsess "github.com/hanchat/luagen/gen/testdata/features/hashtag/golden/sess"
	rsess "github.com/hanchat/luagen/gen/testdata/features/rueidis/golden/sess"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/rueidisbackend"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// backendPasswords are the feature specs' users' test passwords.
var backendPasswords = map[string]string{
	"sess":        "backend-sess-test-password-1",
	"sess_loader": "backend-loader-test-password-2",
}

// featureACL is the aclfile of a feature spec's instance sess, as luagen acl
// derives it (the spec's client decides what the runtime needs), with the
// tests' admin user after it.
func featureACL(t *testing.T, feature string) string {
	t.Helper()
	dir := "../gen/testdata/features/" + feature
	spec, err := keyspec.Load(dir + "/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS(dir+"/lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for u, pw := range backendPasswords {
		if hashes[u], err = acl.HashPassword([]byte(pw)); err != nil {
			t.Fatal(err)
		}
	}
	users, _, err := acl.Derive(spec, spec.Instance("sess"), srcs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	return acl.Render(users) + adminLine
}

// backendTarget is one server or cluster the backends run on, as the
// application user and the loader.
type backendTarget struct {
	addrs   []string
	cluster bool
	admin   func(key string) *redis.Client // a client of the node serving key
}

func startBackendTarget(t *testing.T, aclfile string, cluster bool) backendTarget {
	t.Helper()
	if !cluster {
		srv := redistest.Start(t, redistest.WithACL(aclfile), redistest.WithAdmin("luagen_test_admin", "admin-test-password"))
		return backendTarget{addrs: []string{srv.Addr}, admin: func(string) *redis.Client { return srv.Admin() }}
	}
	cl := redistest.StartClusterWith(t, redistest.ClusterConfig{Primaries: 3, ACL: aclfile, AdminUser: "luagen_test_admin", AdminPassword: "admin-test-password"})
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Username: "luagen_test_admin", Password: "admin-test-password"})
	t.Cleanup(func() { _ = cc.Close() })
	return backendTarget{addrs: cl.Addrs(), cluster: true, admin: func(key string) *redis.Client {
		slot := int(cc.ClusterKeySlot(context.Background(), key).Val())
		p, err := cl.PrimaryOf(context.Background(), slot)
		if err != nil {
			t.Fatal(err)
		}
		return p.Admin()
	}}
}

func (b backendTarget) goRedis(t *testing.T, user string) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	if b.cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: b.addrs, Username: user, Password: backendPasswords[user], MaxRetries: -1})
	} else {
		c = redis.NewClient(&redis.Options{Addr: b.addrs[0], Username: user, Password: backendPasswords[user], MaxRetries: -1})
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (b backendTarget) rueidis(t *testing.T, user string) *rueidisbackend.Conn {
	t.Helper()
	// The client-side cache stays off: scripts do not use it, and CLIENT
	// TRACKING (BCAST) would tell a client the names of keys others write.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: b.addrs, Username: user, Password: backendPasswords[user],
		DisableCache: true, ForceSingleClient: !b.cluster})
	if err != nil {
		t.Fatalf("rueidis as %s: %v", user, err)
	}
	t.Cleanup(rc.Close)
	conn, err := rueidisbackend.New(context.Background(), rc)
	if err != nil {
		t.Fatalf("rueidisbackend.New as %s: %v", user, err)
	}
	return conn
}

// The generated aclfile fits the chosen client (issue 21: with client: rueidis,
// rueidisbackend.New sent CLIENT INFO, which the aclfile refused, and no
// generated user could find a cluster's slots). Each backend, on a standalone
// server and on a cluster started from its feature spec's generated aclfile:
// the loader loads the scripts, the application user runs one (the session
// lock held, a version written), and the application user still gets NOPERM
// for what it was never granted.
func TestEachBackendRunsUnderTheGeneratedACL(t *testing.T) {
	for _, backend := range []struct{ name, feature string }{{"go-redis", "hashtag"}, {"rueidis", "rueidis"}} {
		for _, cluster := range []bool{false, true} {
			name := backend.name + "/standalone"
			if cluster {
				name = backend.name + "/cluster"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				target := startBackendTarget(t, featureACL(t, backend.feature), cluster)
				id := uuid.NewString()
				var run func() (int64, error)
				var lockKey string
				var app func(args ...string) error
				switch backend.name {
				case "go-redis":
					if _, err := runtime.PreloadNodes(ctx, target.goRedis(t, "sess_loader"), hsess.AllScripts()...); err != nil {
						t.Fatalf("preload as sess_loader: %v", err)
					}
					c := target.goRedis(t, "sess")
					s, err := hsess.NewScripts(hsess.Clients{DB0: c})
					if err != nil {
						t.Fatal(err)
					}
					data, _ := hsess.NewSessionDataKey(id)
					lock, _ := hsess.NewSessionLockKey(id)
					lockKey = lock.String()
					run = func() (int64, error) {
						return s.SessionSave(ctx, data, lock, hsess.SessionSaveArgs{Owner: "owner-1234567890abcdef", Body: []byte("b")})
					}
					app = func(args ...string) error {
						a := make([]any, len(args))
						for i, w := range args {
							a[i] = w
						}
						return c.Do(ctx, a...).Err()
					}
				case "rueidis":
					if _, err := rueidisbackend.PreloadNodes(ctx, target.rueidis(t, "sess_loader"), rsess.AllScripts()...); err != nil {
						t.Fatalf("preload as sess_loader: %v", err)
					}
					conn := target.rueidis(t, "sess")
					s, err := rsess.NewScripts(rsess.Clients{DB0: conn})
					if err != nil {
						t.Fatal(err)
					}
					data, _ := rsess.NewSessionDataKey(id)
					lock, _ := rsess.NewSessionLockKey(id)
					lockKey = lock.String()
					run = func() (int64, error) {
						return s.SessionSave(ctx, data, lock, rsess.SessionSaveArgs{Owner: "owner-1234567890abcdef", Body: []byte("b")})
					}
					rc := conn.Client()
					app = func(args ...string) error {
						return rc.Do(ctx, rc.B().Arbitrary(args...).Build()).Error()
					}
				}
				if err := target.admin(lockKey).Set(ctx, lockKey, "owner-1234567890abcdef", 30*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
				if v, err := run(); err != nil || v != 1 {
					t.Fatalf("session_save as the application user: %d %v", v, err)
				}
				for _, cmd := range [][]string{{"script", "load", "return 1"}, {"eval", "return 1", "0"}, {"client", "list"}, {"client", "tracking", "on"}, {"keys", "*"}, {"config", "get", "*"}} {
					if err := app(cmd...); !isNoPerm(err) {
						t.Errorf("%v as the application user: %v, want NOPERM", cmd, err)
					}
				}
			})
		}
	}
}
