package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// The runtime on Redis Cluster: Preload reaches every node, calls route by their
// key's slot, and a node that lost its scripts (a restart, SCRIPT FLUSH) recovers
// both for single calls and inside a pipeline.
func TestRuntimeOnCluster(t *testing.T) {
	ctx := context.Background()
	cluster := redistest.StartCluster(t, 3)
	cc := cluster.Client(t)
	incr := mustScript(t, "incr", incrSrc, false)
	get := mustScript(t, "get", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", true)

	if err := runtime.Preload(ctx, cc, incr, get); err != nil {
		t.Fatal(err)
	}
	for _, node := range cluster.Nodes {
		ok, err := node.Client(0).ScriptExists(ctx, incr.SHA1(), get.SHA1()).Result()
		if err != nil || !ok[0] || !ok[1] {
			t.Fatalf("node %s after Preload: %v %v", node.Addr, ok, err)
		}
	}
	// Keys spread over the slots, so over the three nodes.
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	for _, k := range keys {
		if _, err := incr.Run(ctx, cc, []string{k}, 2); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	// Every node forgets its scripts; single calls and a pipeline both recover.
	for _, node := range cluster.Nodes {
		if err := node.Client(0).ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys[:10] {
		if v, err := get.Run(ctx, cc, []string{k}); err != nil || v != "2" {
			t.Fatalf("GET %s after SCRIPT FLUSH: %v %v", k, v, err)
		}
	}
	b := &runtime.Batch{}
	var pending []*runtime.Pending[int64]
	for _, k := range keys {
		pending = append(pending, runtime.Queue(b, callOf(incr, k, 1), func(v any) (int64, error) { return v.(int64), nil }))
	}
	if err := b.Exec(ctx, cc); err != nil {
		t.Fatal(err)
	}
	for i, p := range pending {
		if v, err := p.Result(); err != nil || v != 3 {
			t.Fatalf("%s in a cluster pipeline: %v %v", keys[i], v, err)
		}
	}
}

// On a Ring, SCRIPT LOAD has no key and go-redis sends it to one shard; the
// runtime loads on every shard so NOSCRIPT recovery works wherever a key lands.
func TestRuntimeOnRing(t *testing.T) {
	ctx := context.Background()
	a, b := redistest.Start(t), redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr, "b": b.Addr}})
	defer ring.Close()
	incr := mustScript(t, "incr", incrSrc, false)
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("r%d", i)
	}
	for round := 1; round <= 2; round++ {
		a.Client(0).ScriptFlush(ctx)
		b.Client(0).ScriptFlush(ctx)
		for _, k := range keys {
			if _, err := incr.Run(ctx, ring, []string{k}, 1); err != nil {
				t.Fatalf("round %d, %s: %v", round, k, err)
			}
		}
		bt := &runtime.Batch{}
		var ps []*runtime.Pending[int64]
		for _, k := range keys {
			ps = append(ps, runtime.Queue(bt, callOf(incr, k, 1), func(v any) (int64, error) { return v.(int64), nil }))
		}
		a.Client(0).ScriptFlush(ctx)
		b.Client(0).ScriptFlush(ctx)
		if err := bt.Exec(ctx, ring); err != nil {
			t.Fatal(err)
		}
		for i, p := range ps {
			if v, err := p.Result(); err != nil || v != int64(2*round) {
				t.Fatalf("round %d, %s in a ring pipeline: %v %v", round, keys[i], v, err)
			}
		}
	}
	if a.Client(0).DBSize(ctx).Val() == 0 || b.Client(0).DBSize(ctx).Val() == 0 {
		t.Fatal("the keys did not spread over both shards: the test proves nothing")
	}
}
