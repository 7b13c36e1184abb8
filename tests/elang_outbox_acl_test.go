package tests

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/elang/consumer"
	"github.com/hanchat/luagen/services/elang/outbox"
	"github.com/redis/go-redis/v9"
)

const (
	elangOutboxPassword       = "elang-app-outbox-test-password-41b7"
	elangOutboxLoaderPassword = "elang-loader-outbox-test-password-93e0"
)

// The relay, a queue worker and a realtime hub run as elang_app under the aclfile
// luagen derives for one deployment (acme:production:), outbox_relay loaded through
// elang_loader: everything they call from Go and from outbox_relay is granted, and
// the same user gets NOPERM on the outbox stream of another deployment, on a
// command no entry grants, and on SCRIPT LOAD itself.
func TestElangOutboxUnderGeneratedACL(t *testing.T) {
	ctx := context.Background()
	spec, err := keyspec.Load("../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	hash, err := acl.HashPassword([]byte(elangOutboxPassword + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	loaderHash, err := acl.HashPassword([]byte(elangOutboxLoaderPassword + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	users, _, err := acl.Derive(spec, spec.Instance("elang"), srcs, map[string]string{"elang_app": hash, "elang_loader": loaderHash})
	if err != nil {
		t.Fatal(err)
	}
	const deployment = "acme:production:"
	srv := redistest.Start(t, redistest.WithACL(acl.Render(acl.Deploy(users, deployment))+adminLine))
	// elang_app runs scripts but may not load them: it recovers NOSCRIPT through
	// the loader user (runtime.WithLoader), as a service holding its credential does.
	rdb := runtime.WithLoader(srv.Client(elang.DB0, func(o *redis.Options) { o.Username, o.Password = "elang_app", elangOutboxPassword }),
		srv.Client(elang.DB0, func(o *redis.Options) { o.Username, o.Password = "elang_loader", elangOutboxLoaderPassword }), elang.AllScripts()...)
	p, err := elang.NewPrefix(deployment)
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := elang.NewScripts(elang.Clients{DB0: rdb}, elang.WithPrefix(p))
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.Schema(t, 8, outbox.Migration)

	workerGroup, err := consumer.NewGroup(rdb, p, "queue", "w1")
	if err != nil {
		t.Fatal(err)
	}
	hubGroup, err := consumer.NewGroup(rdb, p, "realtime:a", "hub")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []*consumer.Group{workerGroup, hubGroup} {
		if err := g.Ensure(ctx); err != nil {
			t.Fatalf("XGROUP CREATE as elang_app: %v", err)
		}
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := (outbox.Events{}).Publish(ctx, tx, "room:1", []byte("e")); err != nil {
			t.Fatal(err)
		}
		if _, err := (outbox.Queue{}).Push(ctx, tx, "mail", []byte("j")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	total, err := outbox.NewRelay(db, rdb, scripts, p, outbox.Options{}).Drain(ctx, nil)
	if err != nil || total.Appended != 10 {
		t.Fatalf("relay as elang_app: %+v %v, want 10 appended", total, err)
	}
	ran := 0
	w := consumer.NewWorker(db, workerGroup, func(context.Context, consumer.Job) error { ran++; return nil },
		consumer.WorkerOptions{Queues: []string{"mail"}, Block: time.Millisecond, ReclaimIdle: time.Millisecond})
	if _, err := w.Step(ctx); err != nil {
		t.Fatalf("worker step (XAUTOCLAIM, XREADGROUP, XACK) as elang_app: %v", err)
	}
	if _, err := w.Step(ctx); err != nil {
		t.Fatalf("second worker step as elang_app: %v", err)
	}
	got := 0
	h := consumer.NewHub(db, hubGroup, consumer.HubOptions{Block: time.Millisecond})
	if _, err := h.Subscribe("room:1", 0, func(d consumer.Delivery) { got += len(d.Events) }); err != nil {
		t.Fatal(err)
	}
	if err := h.Step(ctx); err != nil {
		t.Fatalf("hub step as elang_app: %v", err)
	}
	if ran != 5 || got != 5 {
		t.Fatalf("worker ran %d jobs, hub delivered %d events; want 5 and 5", ran, got)
	}
	pend, err := srv.Client(0, admin).XPending(ctx, deployment+"outbox:stream", "queue").Result()
	if err != nil || pend.Count != 0 {
		t.Fatalf("queue group pending %+v %v, want 0", pend, err)
	}

	other, err := consumer.NewGroup(rdb, mustPrefix(t, "acme:staging:"), "queue", "w1")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Ensure(ctx); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("XGROUP CREATE on another deployment's stream: %v, want NOPERM", err)
	}
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "acme:staging:outbox:stream", MaxLen: 10, Values: []any{"k", "v"}}).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("XADD to another deployment's stream: %v, want NOPERM", err)
	}
	if err := rdb.XDel(ctx, deployment+"outbox:stream", "0-1").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("XDEL, granted by no entry: %v, want NOPERM", err)
	}
	app := srv.Client(elang.DB0, func(o *redis.Options) { o.Username, o.Password = "elang_app", elangOutboxPassword })
	if err := app.ScriptLoad(ctx, "return 1").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("SCRIPT LOAD as elang_app: %v, want NOPERM", err)
	}
}

func mustPrefix(t *testing.T, s string) elang.Prefix {
	t.Helper()
	p, err := elang.NewPrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
