package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// The generated monitor user reads CLIENT LIST and does nothing else; with it
// as the Pub/Sub Subscriber's Monitor, the output-buffer sampler reads the
// subscriber connection's omem on a server started from the generated aclfile
// and config, where the application user may not list clients.
func TestMonitorUserSamplesPubSubOutputBuffers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := startACLInstance(t, "vm1")
	monitorName := acl.MonitorUser(a.in)
	as := func(user string) func(*redis.Options) {
		return func(o *redis.Options) { o.Username, o.Password = user, aclPasswords[user] }
	}
	monitor := a.srv.Client(0, as(monitorName)) // CLIENT LIST is server-wide; the monitor may not SELECT
	app := a.srv.Client(vm1.DB1, as(appUsers["vm1"]))
	key := a.spec.KeysOf(a.in)[0].Pattern.Example()

	if list, err := monitor.ClientList(ctx).Result(); err != nil || !strings.Contains(list, "user="+monitorName) {
		t.Fatalf("%s CLIENT LIST: %v\n%s", monitorName, err, list)
	}
	for _, cmd := range [][]any{
		{"get", key}, {"set", key, "v"}, {"eval", "return 1", "0"}, {"evalsha", strings.Repeat("0", 40), "0"},
		{"script", "load", "return 1"}, {"client", "kill", "id", "1"}, {"client", "no-evict", "on"}, {"info"},
		{"config", "get", "*"}, {"keys", "*"}, {"subscribe", "han:rt:x"}, {"monitor"}, {"acl", "list"},
	} {
		if err := monitor.Do(ctx, cmd...).Err(); !isNoPerm(err) {
			t.Errorf("%s %v: %v, want NOPERM", monitorName, cmd, err)
		}
	}
	if err := app.ClientList(ctx).Err(); !isNoPerm(err) {
		t.Errorf("%s CLIENT LIST: %v, want NOPERM", appUsers["vm1"], err)
	}

	contract, err := pubsub.NewContract(pubsub.Allow[struct{}]("test.ping"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := pubsub.Dialog(uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	sub, err := pubsub.NewSubscriber(app, contract, func(context.Context, pubsub.Gap) error { return nil }, pubsub.Options{
		Channels:    []pubsub.Channel{ch},
		Registerer:  reg,
		Monitor:     monitor,
		SampleEvery: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = sub.Run(runCtx) }()
	defer func() { stop(); <-runDone }()
	samples := func(result string) float64 {
		return promtest.Value(t, reg, "han_rt_pubsub_output_buffer_samples_total", map[string]string{"result": result})
	}
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return samples("ok") >= 3 }) {
		t.Fatalf("output-buffer samples: ok %v, not_found %v, error %v; want reads through %s",
			samples("ok"), samples("not_found"), samples("error"), monitorName)
	}
	if n := samples("error"); n != 0 {
		t.Fatalf("%v samples failed: the monitor user lacks what the sampler needs", n)
	}
}
