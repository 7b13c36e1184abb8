// Package split_test runs HAN's VM1 services, unchanged, on the layout seed 000
// R6 foresees: DB1 (realtime) on a redis-server of its own, DB0 and DB2 on
// another, each server started from the aclfile and config luagen derives for
// it from the edited spec.
package split_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/specedit"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/hanchat/luagen/services/vm1/coord"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/hanchat/luagen/services/vm1/jwks"
	"github.com/hanchat/luagen/services/vm1/legacystub"
	"github.com/hanchat/luagen/services/vm1/presence"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/hanchat/luagen/services/vm1/settings"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

const (
	password  = "split-test-api-backend-password"
	loaderPW  = "split-test-vm1-loader-password"
	adminLine = "user admin on >split-test-admin ~* &* +@all\n"
)

// splitServers starts one redis-server per server of the split vm1, each from
// its own generated aclfile and config (plus an admin user for the test's own
// checks), and returns them by server name ("" is vm1's own).
func splitServers(t *testing.T) map[string]*redistest.Server {
	t.Helper()
	src, err := os.ReadFile("../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edited, err := specedit.MoveDB(src, specedit.HANRealtime)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := keyspec.Parse("keyspec.yaml", edited)
	if err != nil {
		t.Fatal(err)
	}
	in := spec.Instance("vm1")
	srcs, err := compiler.Load(spec, os.DirFS("../../lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	hash, err := acl.HashPassword([]byte(password))
	if err != nil {
		t.Fatal(err)
	}
	loaderHash, err := acl.HashPassword([]byte(loaderPW))
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]*redistest.Server{}
	for _, name := range in.ServerNames() {
		users, _, err := acl.DeriveServer(spec, in, name, srcs, map[string]string{"api_backend": hash, acl.LoaderUser(in): loaderHash})
		if err != nil {
			t.Fatal(err)
		}
		servers[name] = redistest.Start(t,
			redistest.WithACL(acl.Render(users)+adminLine),
			redistest.WithConfigFor(func(port int, dir string) []string {
				conf, err := serverconf.RenderServer(spec, in, name, serverconf.Options{Bind: "127.0.0.1", Port: port, ACLFile: redistest.ACLPath(dir)})
				if err != nil {
					t.Fatal(err)
				}
				return strings.Split(conf, "\n")
			}))
	}
	return servers
}

// client is what a service builds from its URL variable.
func client(t *testing.T, srv *redistest.Server, user, pw string, db int) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(srv.URL(user, pw, db))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The VM1 services run unchanged on two servers: only the URLs differ. Each
// call reaches the server its database is on, every key lands there and
// nowhere else, and each server's aclfile refuses what belongs to the other.
func TestVM1ServicesOnSplitServers(t *testing.T) {
	ctx := context.Background()
	servers := splitServers(t)
	own, realtime := servers[""], servers["realtime"]
	// REDIS_URL and SAFETY_STUB_REDIS_URL name vm1's own server, REDIS_REALTIME_URL the realtime one.
	db0 := client(t, own, "api_backend", password, vm1.DB0)
	db2 := client(t, own, "api_backend", password, vm1.DB2)
	db1 := client(t, realtime, "api_backend", password, vm1.DB1)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: db0, DB1: db1, DB2: db2})
	if err != nil {
		t.Fatal(err)
	}
	// The deploy step: every server's scripts loaded as its loader user (the
	// application user may not SCRIPT LOAD).
	for _, srv := range []*redistest.Server{own, realtime} {
		if err := runtime.Preload(ctx, client(t, srv, "vm1_loader", loaderPW, 0), vm1.AllScripts()...); err != nil {
			t.Fatal(err)
		}
	}
	user := uuid.NewString()

	// DB0: rate limits, JWKS negative cache, idempotency (with its PostgreSQL store).
	ipKey, err := secrets.NewHMACKey([]byte("split-test-ip-key-32-bytes-long!"))
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := ratelimit.New(scripts, ratelimit.DefaultPolicy(), ratelimit.Options{IPKey: ipKey})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := limiter.Allow(ctx, ratelimit.Subject{UserID: user}, vm1.APIRouteProfileUpdate); err != nil || !d.Allowed || d.Degraded {
		t.Fatalf("rate limit: %+v %v", d, err)
	}
	negative := jwks.New(scripts)
	if created, err := negative.MarkMissing(ctx, "kid-split"); err != nil || !created {
		t.Fatalf("jwks mark: %v %v", created, err)
	}
	if missing, err := negative.KnownMissing(ctx, "kid-split"); err != nil || !missing {
		t.Fatalf("jwks check: %v %v", missing, err)
	}
	keyHMAC, err := secrets.NewHMACKey([]byte("split-test-idempotency-key-32by!"))
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.Schema(t, 8)
	if err := idempotency.NewStore(pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	keeper, err := idempotency.New(scripts, idempotency.NewStore(pool), keyHMAC, idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := idempotency.Request{Scope: vm1.IdemScopeProfileUpdate, UserID: user, Key: "split-key-1", Fingerprint: idempotency.Fingerprint([]byte("PUT /profile"), []byte("{}"))}
	runs := 0
	do := func(ctx context.Context, tx pgx.Tx) (idempotency.Response, error) {
		runs++
		return idempotency.Response{Status: 200, ResourceID: user}, nil
	}
	first, err := keeper.Do(ctx, req, do)
	if err != nil || first.Replayed {
		t.Fatalf("idempotent call: %+v %v", first, err)
	}
	again, err := keeper.Do(ctx, req, do)
	if err != nil || !again.Replayed || again.Source != idempotency.SourceRedis || runs != 1 {
		t.Fatalf("idempotent replay: %+v %v (ran %d times)", again, err, runs)
	}

	// DB1: presence, coordination locks, settings snapshots, Pub/Sub.
	p, err := presence.New(scripts, "gateway-1")
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := p.Connect(ctx, user, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := p.Connections(ctx, user, 10); err != nil || len(ids) != 1 || ids[0] != conn.ID {
		t.Fatalf("presence: %v %v", ids, err)
	}
	locker := coord.New(scripts)
	name, err := coord.Delivery(uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	lock, err := locker.Obtain(ctx, name, coord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	type snapshot struct{ Flags []string }
	store := settings.New[snapshot](scripts)
	if err := store.Put(ctx, 7, snapshot{Flags: []string{"split"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := store.Get(ctx, 7); err != nil || len(got.Flags) != 1 {
		t.Fatalf("settings: %+v %v", got, err)
	}
	publishAndReceive(t, ctx, db1, user)

	// DB2: the legacy stub.
	stub := legacystub.New(scripts)
	task := uuid.NewString()
	if _, err := stub.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	if poll, err := stub.Poll(ctx, task); err != nil || poll.Polls != 1 {
		t.Fatalf("stub poll: %+v %v", poll, err)
	}

	// Every key is on the server of its database, and only there.
	want := map[*redistest.Server]map[int][]string{
		own:      {0: {"han:api:"}, 1: nil, 2: {"han:legacy:"}},
		realtime: {0: nil, 1: {"han:rt:", "han:coord:", "han:settings:snapshot:"}},
	}
	// The realtime server has the databases up to the one placed on it, and
	// no other (databases 2): nothing can land in a database above it.
	if err := client(t, realtime, "admin", "split-test-admin", 2).Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "DB index is out of range") {
		t.Errorf("db 2 on the realtime server: %v, want out of range", err)
	}
	for srv, dbs := range want {
		for db, prefixes := range dbs {
			keys, err := client(t, srv, "admin", "split-test-admin", db).Keys(ctx, "*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if !hasPrefix(k, prefixes) {
					t.Errorf("%s db %d holds %s", srv.Addr, db, k)
				}
			}
			for _, pre := range prefixes {
				if !anyPrefix(keys, pre) {
					t.Errorf("%s db %d holds no %s* key", srv.Addr, db, pre)
				}
			}
		}
	}

	// Each server refuses what belongs to the other: a realtime script on vm1's
	// own server, an idempotency script on the realtime server.
	wrong, err := vm1.NewScripts(vm1.Clients{DB0: client(t, realtime, "api_backend", password, vm1.DB0), DB1: client(t, own, "api_backend", password, vm1.DB1)})
	if err != nil {
		t.Fatal(err)
	}
	misplaced, _ := presence.New(wrong, "gateway-2")
	if _, _, err := misplaced.Connect(ctx, user, 1); !errors.Is(err, runtime.ErrorCode("NOPERM")) {
		t.Errorf("presence on vm1's own server: %v, want NOPERM", err)
	}
	misplacedNegative := jwks.New(wrong)
	if _, err := misplacedNegative.MarkMissing(ctx, "kid-wrong"); !errors.Is(err, runtime.ErrorCode("NOPERM")) {
		t.Errorf("jwks on the realtime server: %v, want NOPERM", err)
	}
}

// publishAndReceive publishes one realtime event through the realtime server
// and receives it there.
func publishAndReceive(t *testing.T, ctx context.Context, db1 *redis.Client, user string) {
	t.Helper()
	type pong struct {
		N int64 `msgpack:"n"`
	}
	contract, err := pubsub.NewContract(pubsub.Allow[pong]("split.pong"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := pubsub.User(user)
	if err != nil {
		t.Fatal(err)
	}
	subscribed := make(chan struct{}, 1)
	sub, err := pubsub.NewSubscriber(db1, contract, func(context.Context, pubsub.Gap) error {
		select {
		case subscribed <- struct{}{}:
		default:
		}
		return nil
	}, pubsub.Options{Channels: []pubsub.Channel{ch}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sub.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("the subscriber never confirmed its subscription")
	}
	pub := pubsub.NewPublisher(db1, contract)
	if n, err := pub.Publish(ctx, ch, pubsub.Event{ID: uuid.NewString(), Type: "split.pong", Entity: user, DTO: pong{N: 1}}); err != nil || n != 1 {
		t.Fatalf("publish: %d receivers, %v", n, err)
	}
	select {
	case d := <-sub.Events():
		if d.Event.DTO.(pong).N != 1 {
			t.Fatalf("received %+v", d.Event)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event never arrived")
	}
}

func hasPrefix(k string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

func anyPrefix(keys []string, p string) bool {
	for _, k := range keys {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}
