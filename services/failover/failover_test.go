package failover

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Outages ask for a reload; refusals, misses and the caller's own cancellation
// do not.
func TestOutage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.Nil, false},
		{context.Canceled, false},
		{io.EOF, true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{context.DeadlineExceeded, true},
		{proto("CLUSTERDOWN The cluster is down"), true},
		{proto("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{proto("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{proto("NOPERM this user has no permissions to run the 'get' command"), false},
	} {
		if got := outage(tc.err); got != tc.want {
			t.Errorf("outage(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

type proto string

func (p proto) Error() string { return string(p) }
func (p proto) RedisError()   {}

// A ClusterClient with Follow reloads its slot map when the node serving a
// slot stops answering, without waiting for its reload interval (an hour
// here): the slot map is read again (ClusterSlots is called) after the failure.
func TestFollowReloadsAfterAnOutage(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	var loads atomic.Int64
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			loads.Add(1)
			return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: srv.Addr}}}}, nil
		},
		ClusterStateReloadInterval: time.Hour,
		MaxRedirects:               -1,
		DialTimeout:                time.Second,
	})
	defer cc.Close()
	Follow(cc)
	if err := cc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.HGet(ctx, "k", "f").Err(); err == nil || outage(err) {
		t.Fatalf("a refusal: %v", err)
	}
	before := loads.Load()
	srv.Kill()
	if err := cc.Get(ctx, "k").Err(); !outage(err) {
		t.Fatalf("GET of a dead node: %v, want an outage", err)
	}
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return loads.Load() > before }) {
		t.Fatalf("the slot map was not read again after the outage (%d loads)", loads.Load())
	}
}
