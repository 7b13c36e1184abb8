package degraded_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/redis/go-redis/v9"
)

func TestUnavailableClassifiesRealFailures(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(0)
	get := mustScript(t, "get", "return redis.call('GET', KEYS[1])", false)

	// Refusals of this call: never an outage.
	c.HSet(ctx, "h", "f", "v")
	_, wrongType := get.Run(ctx, c, []string{"h"})
	boom := mustScript(t, "boom", "return redis.error_reply('NOT_OWNER no')", false)
	_, own := boom.Run(ctx, c, nil)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, byCaller := get.Run(canceled, c, []string{"k"})
	for name, err := range map[string]error{
		"WRONGTYPE":         wrongType,
		"the script's code": own,
		"caller canceled":   byCaller,
		"bad argument":      &runtime.ArgError{Script: "s", Arg: "a", Reason: "r"},
		"bad key part":      &runtime.KeyPartError{Key: "k", Part: "p", Reason: "r"},
		"reply shape":       fmt.Errorf("wrapped: %w", &runtime.ReplyError{Script: "s", Reason: "r"}),
		"nil":               nil,
	} {
		if degraded.Unavailable(err) {
			t.Errorf("%s (%v) classified as unavailable", name, err)
		}
	}

	// A hung server past the caller's deadline, and a dead one: outages.
	hung := redis.NewClient(&redis.Options{Addr: redistest.Hung(t), ContextTimeoutEnabled: true, MaxRetries: -1, Protocol: 2})
	defer hung.Close()
	short, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	_, timedOut := get.Run(short, hung, []string{"k"})
	srv.Kill()
	_, dead := get.Run(ctx, c, []string{"k"})
	for name, err := range map[string]error{"deadline on a hung server": timedOut, "server killed": dead, "busy": &runtime.ScriptError{Code: "BUSY"}} {
		if !degraded.Unavailable(err) {
			t.Errorf("%s (%v) not classified as unavailable", name, err)
		}
	}
	if errors.Is(timedOut, context.Canceled) {
		t.Fatal("a deadline must not read as a cancellation")
	}
}

func mustScript(t *testing.T, name, src string, ro bool) *runtime.Script {
	t.Helper()
	sum := sha1.Sum([]byte(src))
	s, err := runtime.NewScript(name, src, hex.EncodeToString(sum[:]), ro)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
