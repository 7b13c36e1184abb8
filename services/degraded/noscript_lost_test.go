package degraded_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/redis/go-redis/v9"
)

// flushAfterLoad empties the script cache right after each SCRIPT LOAD, as a
// server restarted between Script.Run's load and its retry would.
type flushAfterLoad struct{ admin *redis.Client }

func (h flushAfterLoad) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h flushAfterLoad) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "script" && len(cmd.Args()) > 1 && cmd.Args()[1] == "load" {
			_ = h.admin.ScriptFlush(ctx).Err()
		}
		return err
	}
}

func (h flushAfterLoad) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A NOSCRIPT that survives Run's reload (the script cache was lost again in
// between: a restart) is an outage, so degraded modes apply, never a refusal.
func TestNoScriptAfterTheReloadIsUnavailable(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(0)
	c.AddHook(flushAfterLoad{admin: srv.Client(0)})
	get := mustScript(t, "get", "return redis.call('GET', KEYS[1])", false)
	_, err := get.Run(ctx, c, []string{"k"})
	var se *runtime.ScriptError
	if !errors.As(err, &se) || se.Code != "NOSCRIPT" {
		t.Fatalf("want NOSCRIPT after the reload, got %v", err)
	}
	if !degraded.Unavailable(err) {
		t.Fatalf("%v classified as a refusal", err)
	}
}
