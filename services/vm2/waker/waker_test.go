package waker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/hanchat/luagen/services/vm2/waker"
)

// A worker that subscribes while Redis is down is not refused: its subscription is
// made when Redis comes up, and it is told so (WakeSubscribed) before it receives
// notifications.
func TestSafetyWakeupSubscribedWhileRedisDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, _ := safetytest.StartRedis(t)
	c, reg := safetytest.New(t, srv.Client(vm2.DB0, safetytest.Impatient), safetyredis.Options{RetryInterval: 20 * time.Millisecond})
	wk, err := waker.New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	sub, err := wk.Subscribe(ctx)
	if err != nil {
		t.Fatalf("subscribe while Redis is down: %v", err)
	}
	defer sub.Close()
	srv.Restart()
	safetytest.WaitWakeup(t, sub, safetyrecord.WakeSubscribed, 10*time.Second)
	var res waker.PublishResult
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool {
		res, err = wk.Publish(ctx, safetyrecord.Wakeup{Reason: safetyrecord.WakeTasksReady})
		return err == nil && res.Sent
	}) || res.Receivers != 1 {
		t.Fatalf("publish: %+v %v", res, err)
	}
	safetytest.WaitWakeup(t, sub, safetyrecord.WakeTasksReady, 5*time.Second)
	// Invalid payloads on the channel (another publisher's bug) are counted, not delivered.
	admin := srv.Client(vm2.DB0)
	if err := admin.Publish(ctx, vm2.NewSafetyWakeupChannel().String(), "task 42 is ready: {json document}").Err(); err != nil {
		t.Fatal(err)
	}
	if !redistest.WaitFor(ctx, 5*time.Second, func() bool {
		return promtest.Value(t, reg, "han_safety_wakeup_received_total", map[string]string{"result": "invalid"}) == 1
	}) {
		t.Fatal("the invalid payload was not counted")
	}
	select {
	case w := <-sub.C():
		t.Fatalf("delivered %+v from an invalid payload", w)
	default:
	}
}

// A Client whose Redis client cannot PUBLISH and SUBSCRIBE (luatest's
// Scripter) makes no Waker.
func TestNewRefusesAClientWithoutPubSub(t *testing.T) {
	c, _ := safetytest.New(t, luatest.NewServer(nil).Scripter(), safetyredis.Options{})
	if _, err := waker.New(c); !errors.Is(err, waker.ErrNoPubSub) {
		t.Fatalf("a Waker without Pub/Sub: %v", err)
	}
	if _, err := waker.New(nil); err == nil {
		t.Fatal("a Waker on a nil Client: accepted")
	}
}
