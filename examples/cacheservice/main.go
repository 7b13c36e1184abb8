// Command cacheservice is luagen's second example: a service with its own,
// non-HAN spec (keyspec.yaml here) in the style of the Elang framework: a cache,
// locks, recent items and tags, an outbox relayed into a bounded stream, and
// sessions on Redis Cluster, all under a deployment prefix. It generates its
// packages into internal/redisgen (and the cluster instance sessions a second
// time, for rueidis, into internal/rueidisgen, which its cluster tests run on)
// and runs one of each kind of call. Run it with
// REDIS_URL and APP_URL (or CACHESERVICE_REDIS_PREFIX) set.
package main

//go:generate go run github.com/hanchat/luagen/cmd/luagen generate --spec keyspec.yaml --lua lua --out internal/redisgen
//go:generate go run github.com/hanchat/luagen/cmd/luagen generate --spec keyspec.yaml --lua lua --out internal/rueidisgen --instance sessions --client rueidis

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"os"

	"github.com/hanchat/luagen/examples/cacheservice/internal/redisgen/app"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(context.Background()); err != nil {
		slog.Error("cacheservice", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	raw := os.Getenv(app.DB0URLEnv)
	// Not redis.ParseURL: its error quotes the URL, password included.
	opts, err := secrets.ParseRedisURL(app.DB0URLEnv, raw)
	if err != nil {
		return err
	}
	client := redis.NewClient(opts)
	defer client.Close()

	// The explicit prefix wins; else the one derived from APP_URL.
	prefix, err := app.PrefixFromEnv()
	if err != nil {
		return err
	}
	scripts, err := app.NewScripts(app.Clients{DB0: client}, app.WithPrefix(prefix))
	if err != nil {
		return err
	}
	// Under luagen's aclfile the application user runs scripts but may not
	// load them: the deploy step loads them (luagen load), and a service that
	// also holds the loader user's credential (docs/operators.md, "Who may load code")
	// recovers NOSCRIPT through it, only for these exact scripts.
	if raw := os.Getenv("APP_LOADER_URL"); raw != "" {
		lopts, err := secrets.ParseRedisURL("APP_LOADER_URL", raw)
		if err != nil {
			return err
		}
		loader := redis.NewClient(lopts)
		defer loader.Close()
		runtime.WithLoader(client, loader, app.AllScripts()...)
		if err := runtime.Preload(ctx, client, app.AllScripts()...); err != nil {
			return err
		}
	}
	key, err := app.NewLockKey(prefix, "report-42")
	if err != nil {
		return err
	}
	owner := token()
	ok, err := scripts.LockAcquire(ctx, key, app.LockAcquireArgs{Owner: owner})
	if err != nil {
		return err
	}
	slog.Info("lock", "prefix", prefix.String(), "acquired", ok)
	if ok {
		_, err = scripts.LockRelease(ctx, key, app.LockReleaseArgs{Owner: owner})
	}
	return err
}

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
