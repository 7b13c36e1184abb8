package tests

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
	jobs "github.com/hanchat/luagen/gen/testdata/features/channels/golden/jobs"
	orders "github.com/hanchat/luagen/gen/testdata/features/patterns/golden/app"
	locks "github.com/hanchat/luagen/gen/testdata/features/repeat/golden/locks"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// featureServer starts a redis-server from the generated aclfile and config of
// feature dir's instance: the application user and the loader get passwords,
// plus the test's admin. It returns the server and a client per user.
func featureServer(t *testing.T, dir, instance string) (*redistest.Server, map[string]*redis.Client) {
	t.Helper()
	spec, err := keyspec.Load(dir + "/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := spec.Instance(instance)
	srcs, err := compiler.Load(spec, os.DirFS(dir+"/lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	passwords := map[string]string{instance: instance + "-app-test-password", acl.LoaderUser(in): instance + "-loader-test-password"}
	hashes := map[string]string{}
	for u, pw := range passwords {
		if hashes[u], err = acl.HashPassword([]byte(pw)); err != nil {
			t.Fatal(err)
		}
	}
	users, _, err := acl.Derive(spec, in, srcs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t,
		redistest.WithACL(acl.Render(users)+adminLine),
		redistest.WithConfigFor(func(port int, d string) []string {
			conf, err := serverconf.Render(spec, in, serverconf.Options{Bind: "127.0.0.1", Port: port, ACLFile: redistest.ACLPath(d)})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Split(conf, "\n")
		}))
	clients := map[string]*redis.Client{}
	for u, pw := range passwords {
		clients[u] = srv.Client(0, func(o *redis.Options) { o.Username, o.Password = u, pw })
	}
	return srv, clients
}

// A lock over many resources (a repeating KEYS position, a repeating ARGV),
// run through the generated wrappers on a server started from the generated
// aclfile, as the application user: every lock or none, each with its TTL,
// released through the position's interface slice, counts refused before
// anything is sent.
func TestRepeatingKeysUnderTheGeneratedACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, clients := featureServer(t, "../gen/testdata/features/repeat", "locks")
	if err := runtime.Preload(ctx, clients["locks_loader"], locks.AllScripts()...); err != nil {
		t.Fatalf("SCRIPT LOAD as the loader: %v", err)
	}
	app := clients["locks"]
	if err := app.Do(ctx, "script", "load", "return 1").Err(); !isNoPerm(err) {
		t.Fatalf("the application user loaded code: %v", err)
	}
	s, err := locks.NewScripts(locks.Clients{DB0: app})
	if err != nil {
		t.Fatal(err)
	}
	res := func(names ...string) []locks.ResourceLockKey {
		var out []locks.ResourceLockKey
		for _, n := range names {
			k, err := locks.NewResourceLockKey(n)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, k)
		}
		return out
	}
	a, b := scripttest.Nonce(t), scripttest.Nonce(t)
	first := res("orders:42", "orders:43", "invoices:2024:7")
	if ok, err := s.Acquire(ctx, first, locks.AcquireArgs{Owner: a}); err != nil || !ok {
		t.Fatalf("acquire three: %v %v", ok, err)
	}
	admin0 := srv.Client(0, admin)
	for _, k := range first {
		if v := admin0.Get(ctx, k.String()).Val(); v != a {
			t.Fatalf("%s holds %q, want the owner", k, v)
		}
		if ttl := admin0.PTTL(ctx, k.String()).Val(); ttl <= 0 || ttl > locks.ResourceLockTTL {
			t.Fatalf("%s TTL %v, want within %v", k, ttl, locks.ResourceLockTTL)
		}
	}
	// One of the resources is held: none is taken.
	second := res("orders:43", "orders:44")
	if ok, err := s.Acquire(ctx, second, locks.AcquireArgs{Owner: b}); err != nil || ok {
		t.Fatalf("acquire over a held lock: %v %v", ok, err)
	}
	if n := admin0.Exists(ctx, second[1].String()).Val(); n != 0 {
		t.Fatal("a partial acquire left a lock")
	}
	// Extend with one owner per resource: only the owner's are extended.
	if n, err := s.Extend(ctx, first, locks.ExtendArgs{Owners: []string{a, b, a}}); err != nil || n != 2 {
		t.Fatalf("extend: %d %v, want 2", n, err)
	}
	if _, err := s.Extend(ctx, first, locks.ExtendArgs{Owners: []string{a}}); !errors.Is(err, locks.ErrBadArg) {
		t.Fatalf("extend with too few owners: %v, want ErrBadArg", err)
	}
	// Release through the position's interface: key types mixed in one slice.
	tenant, err := locks.NewTenantLockKey("0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21")
	if err != nil {
		t.Fatal(err)
	}
	mixed := []locks.ReleaseResources{first[0], tenant, first[2], first[1]}
	if n, err := s.Release(ctx, mixed, locks.ReleaseArgs{Owner: a}); err != nil || n != 3 {
		t.Fatalf("release: %d %v, want 3", n, err)
	}
	if n := admin0.Exists(ctx, first[0].String(), first[1].String(), first[2].String()).Val(); n != 0 {
		t.Fatalf("%d locks left after release", n)
	}
	// Counts outside the declared repeat never reach the server.
	before := admin0.Info(ctx, "commandstats").Val()
	if _, err := s.Acquire(ctx, nil, locks.AcquireArgs{Owner: a}); err == nil || !strings.Contains(err.Error(), "0 keys, want 1..64") {
		t.Fatalf("acquire of no resource: %v", err)
	}
	many := make([]string, 65)
	for i := range many {
		many[i] = "r" + strings.Repeat("x", i+1)
	}
	if _, err := s.Acquire(ctx, res(many...), locks.AcquireArgs{Owner: a}); err == nil || !strings.Contains(err.Error(), "65 keys, want 1..64") {
		t.Fatalf("acquire of 65 resources: %v", err)
	}
	if after := admin0.Info(ctx, "commandstats").Val(); evalshaCalls(after) != evalshaCalls(before) {
		t.Fatalf("a refused count was sent: evalsha %s -> %s", evalshaCalls(before), evalshaCalls(after))
	}
}

// evalshaCalls is the calls count of cmdstat_evalsha in INFO commandstats.
func evalshaCalls(info string) string {
	for _, l := range strings.Split(info, "\n") {
		if strings.HasPrefix(l, "cmdstat_evalsha:") {
			calls, _, _ := strings.Cut(strings.TrimPrefix(l, "cmdstat_evalsha:calls="), ",")
			return calls
		}
	}
	return "0"
}

// A channel passed in KEYS (and one in ARGV, and one written in the script),
// on a server started from the generated aclfile, as the application user:
// EVALSHA accepts the channel's name as a key and the messages reach a
// subscriber; without the key grant the ACL would refuse the call.
func TestChannelInKeysUnderTheGeneratedACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, clients := featureServer(t, "../gen/testdata/features/channels", "jobs")
	if err := runtime.Preload(ctx, clients["jobs_loader"], jobs.AllScripts()...); err != nil {
		t.Fatalf("SCRIPT LOAD as the loader: %v", err)
	}
	app := clients["jobs"]
	s, err := jobs.NewScripts(jobs.Clients{DB0: app})
	if err != nil {
		t.Fatal(err)
	}
	events, err := jobs.NewQueueEventsChannel("emails")
	if err != nil {
		t.Fatal(err)
	}
	sub := app.Subscribe(ctx, events.String(), "jobs:events:all")
	defer sub.Close()
	for i := 0; i < 2; i++ {
		if _, err := sub.ReceiveTimeout(ctx, 5*time.Second); err != nil {
			t.Fatalf("subscribe as the application user: %v", err)
		}
	}
	id := "0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21"
	job, _ := jobs.NewJobKey(id)
	waiting, _ := jobs.NewWaitingKey("emails")
	if depth, err := s.Enqueue(ctx, job, waiting, events, jobs.EnqueueArgs{ID: id, Payload: []byte("hi")}); err != nil || depth != 1 {
		t.Fatalf("enqueue: %d %v", depth, err)
	}
	got := map[string]string{}
	for len(got) < 2 {
		m, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got[m.Channel] = m.Payload
	}
	if got[events.String()] != "waiting "+id || got["jobs:events:all"] != "waiting "+id {
		t.Fatalf("messages %v", got)
	}
	if n, err := s.Notify(ctx, job, jobs.NotifyArgs{To: events}); err != nil || n != 1 {
		t.Fatalf("notify through ARGV: %d receivers, %v", n, err)
	}
	if m, err := sub.ReceiveMessage(ctx); err != nil || m.Channel != events.String() || m.Payload != "waiting" {
		t.Fatalf("notify's message: %v %v", m, err)
	}
	// The channel in KEYS is a key to the ACL: the user's ~jobs:events:* grant
	// is what lets EVALSHA through, and the user still reaches no other key.
	admin0 := srv.Client(0, admin)
	dryrun := func(channel string) string {
		r, err := admin0.Do(ctx, "acl", "dryrun", "jobs", "evalsha", jobs.EnqueueSHA1, "3", job.String(), waiting.String(), channel, id, "p").Text()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := dryrun(events.String()); r != "OK" {
		t.Fatalf("ACL DRYRUN of the declared channel in KEYS: %q", r)
	}
	if r := dryrun("other:events:x"); !strings.Contains(r, "no permissions to access the 'other:events:x' key") {
		t.Fatalf("ACL DRYRUN of a channel outside the user's keys: %q", r)
	}
	if _, err := s.Enqueue(ctx, job, waiting, jobs.QueueEventsChannel{}, jobs.EnqueueArgs{ID: id, Payload: []byte("x")}); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Fatalf("the zero channel value: %v", err)
	}
}

// A shared placeholder inside a hash tag that spans segments: the wrapper
// compares the order id in both names before anything is sent (on luatest's
// in-memory Redis; the wrapper refuses the mismatch itself).
func TestSharedPlaceholderInsideATag(t *testing.T) {
	ctx := context.Background()
	srv := luatest.NewServer(luatest.NewClock(time.Unix(1_700_000_000, 0)))
	s, err := orders.NewScripts(orders.Clients{DB0: srv.Scripter()})
	if err != nil {
		t.Fatal(err)
	}
	owner42, _ := orders.NewOrderLockKey(42)
	expiry42, _ := orders.NewOrderExpiryKey(42)
	expiry43, _ := orders.NewOrderExpiryKey(43)
	token := scripttest.Nonce(t)
	if _, err := s.OrderLock(ctx, owner42, expiry43, orders.OrderLockArgs{Token: token}); err == nil || !strings.Contains(err.Error(), "{order_id}") {
		t.Fatalf("keys of two orders: %v, want a mismatch of {order_id}", err)
	}
	if ok, err := s.OrderLock(ctx, owner42, expiry42, orders.OrderLockArgs{Token: token, UntilMS: 1}); err != nil || !ok {
		t.Fatalf("one order's keys: %v %v", ok, err)
	}
	if got := owner42.String(); got != "{orders:lock:42}:owner" {
		t.Fatalf("the key's name %q", got)
	}
}
