// Package failover keeps a go-redis ClusterClient's slot map current through a
// failover: Follow makes it reload the map as soon as calls fail because the
// cluster could not serve them.
package failover

import (
	"context"
	"net"

	"github.com/hanchat/luagen/services/degraded"
	"github.com/redis/go-redis/v9"
)

// Follow makes cc reload its slot map as soon as a command fails because the
// cluster could not serve it (what degraded.Unavailable calls an outage: a
// node unreachable or timing out, CLUSTERDOWN, TRYAGAIN, MASTERDOWN, LOADING,
// READONLY), and keeps reloading while failures last, at most about five times
// a second.
//
// Without it go-redis reloads only on MOVED, ASK or READONLY, and otherwise
// every ClusterStateReloadInterval (a minute by default): after a primary dies,
// nothing it no longer answers can tell the client, so every call of its slots
// keeps going to the dead address long after a replica took over. Install it
// once, where the client is made.
func Follow(cc *redis.ClusterClient) {
	cc.AddHook(failoverHook{cc: cc})
}

type failoverHook struct{ cc *redis.ClusterClient }

func (h failoverHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h failoverHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		_ = h.after(ctx, err)
		return err
	}
}

func (h failoverHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !h.after(ctx, err) {
			for _, c := range cmds {
				if h.after(ctx, c.Err()) {
					break
				}
			}
		}
		return err
	}
}

// after asks for a reload when err says the cluster could not serve a command.
// ReloadState is asynchronous and coalesces requests: one CLUSTER SLOTS at a
// time, then a 200 ms pause.
func (h failoverHook) after(ctx context.Context, err error) bool {
	if outage(err) {
		h.cc.ReloadState(ctx)
		return true
	}
	return false
}

// outage reports whether err means the cluster could not serve a command, as
// opposed to a refusal of it (an error reply) or no error.
func outage(err error) bool {
	return err != nil && err != redis.Nil && degraded.Unavailable(err)
}
