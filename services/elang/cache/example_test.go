package cache_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/services/elang/cache"
	"github.com/hanchat/luagen/services/elang/lock"
	"github.com/hanchat/luagen/services/elang/store"
)

// The seed's example: $cache->set('catalog.version', 4, 300) and
// $runtime->lock('report:42', 30). Without a REDIS_URL the store is a private
// directory of this host (with one, store.Open returns the Redis store and
// nothing else changes).
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "elang-example")
	defer os.RemoveAll(dir)
	p, _ := elang.NewPrefix("acme:production:") // or elang.PrefixFromEnv()
	st, err := store.Open(os.Getenv("ELANG_EXAMPLE_NO_SUCH_URL"), filepath.Join(dir, "store"), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := cache.New(st, cache.Options{})
	_ = c.Set(ctx, "catalog.version", []byte("4"), 300*time.Second)
	v, ok, _ := c.Get(ctx, "catalog.version")
	fmt.Println(string(v), ok, c.Local())

	l := lock.New(st, lock.Options{}).Lock("report:42", 30*time.Second)
	if ok, err := l.Acquire(ctx); err == nil && ok {
		// Bounded, idempotent work; l.Refresh(ctx) before the lease ends.
		fmt.Println("holding report:42")
		_ = l.Release(ctx)
	}
	// Output:
	// 4 true true
	// holding report:42
}
