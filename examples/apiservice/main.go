// Command apiservice shows how a Go service of VM1 uses luagen: it generates its own
// copy of the vm1 package from the HAN spec and calls a script through its typed
// wrapper. Run it with REDIS_URL set, e.g. REDIS_URL=redis://127.0.0.1:6380/0.
package main

//go:generate go run github.com/hanchat/luagen/cmd/luagen generate --spec ../../keyspec.yaml --lua ../../lua --out internal/redisgen --instance vm1

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"os"
	"time"

	"example.com/apiservice/internal/redisgen/vm1"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(context.Background()); err != nil {
		slog.Error("apiservice", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	raw := os.Getenv(vm1.DB0URLEnv)
	// Not redis.ParseURL: its error quotes the URL, password included.
	opts, err := secrets.ParseRedisURL(vm1.DB0URLEnv, raw)
	if err != nil {
		return err
	}
	client := redis.NewClient(opts)
	defer client.Close()

	scripts, err := vm1.NewScripts(vm1.Clients{DB0: client})
	if err != nil {
		return err
	}
	// Under luagen's aclfile the application user runs scripts but may not
	// load them: the deploy step loads them (luagen load), and a service that
	// also holds the loader user's credential (README, "Who may load code")
	// recovers NOSCRIPT through it, only for these exact scripts.
	if raw := os.Getenv("VM1_LOADER_URL"); raw != "" {
		lopts, err := secrets.ParseRedisURL("VM1_LOADER_URL", raw)
		if err != nil {
			return err
		}
		loader := redis.NewClient(lopts)
		defer loader.Close()
		runtime.WithLoader(client, loader, vm1.AllScripts()...)
		if err := runtime.Preload(ctx, client, vm1.AllScripts()...); err != nil {
			return err
		}
	}
	key, err := vm1.NewAPIRLUserKey("0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", vm1.APIRouteMessagesSend, 60)
	if err != nil {
		return err
	}
	d, err := scripts.RateLimitSliding(ctx, key, vm1.RateLimitSlidingArgs{
		Limit: 20, Window: time.Minute, Cost: 1, Nonce: nonce(),
	})
	if err != nil {
		return err
	}
	slog.Info("rate limit", "allowed", d.Allowed, "remaining", d.Remaining, "retry_after", d.RetryAfter)
	return nil
}

func nonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
