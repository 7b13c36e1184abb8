package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/examples/cacheservice/internal/redisgen/sessions"
	rsessions "github.com/hanchat/luagen/examples/cacheservice/internal/rueidisgen/sessions"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/rueidisbackend"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// backend is one Go client the sessions wrappers run on in the cluster tests:
// connect builds its client on the cluster (closed by t.Cleanup) and the
// generated Scripts over it. cc is the test's own go-redis ClusterClient, which
// only the go-redis backend calls scripts through.
type backend struct {
	name    string
	connect func(t *testing.T, ctx context.Context, cluster *redistest.Cluster, cc *redis.ClusterClient, p sessions.Prefix) target
	// fresh: the test reads the server's state after an event with a go-redis
	// ClusterClient made then, not with cc. cc calls no script on such a backend,
	// so nothing moved it off a killed primary (failover.Follow reloads its slot
	// map as calls fail).
	fresh bool
}

// checker is the client the test reads the server's state with after an
// event: cc, or on a backend that leaves cc idle a ClusterClient made now.
func (b backend) checker(t *testing.T, cluster *redistest.Cluster, cc *redis.ClusterClient) *redis.ClusterClient {
	if b.fresh {
		return clusterClient(t, cluster)
	}
	return cc
}

// backends are the clients the cluster tests run on: go-redis (the instance's
// generated package, internal/redisgen/sessions) and rueidis (the same
// instance generated with --client rueidis, internal/rueidisgen/sessions).
var backends = []backend{
	{name: "go-redis", connect: goRedisTarget},
	{name: "rueidis", connect: rueidisTarget, fresh: true},
}

// target is the sessions scripts on one backend, as the load calls them: keys
// by their ids, since each generated package has key types of its own.
type target interface {
	preload(ctx context.Context) (runtime.PreloadReport, error)
	loginAttempt(ctx context.Context, account, attempt string) (attemptResult, error)
	sessionLock(ctx context.Context, id, owner string) (bool, error)
	sessionSave(ctx context.Context, id, owner string, body []byte) (int64, error)
}

// attemptResult is what the tests read of a login_attempt reply.
type attemptResult struct{ Allowed, Duplicate bool }

// loginAccount is one login_attempts key the load calls: its id and its key.
type loginAccount struct{ id, key string }

// goRedisTarget runs the go-redis package on cc, the failover-following
// ClusterClient.
func goRedisTarget(t *testing.T, _ context.Context, _ *redistest.Cluster, cc *redis.ClusterClient, p sessions.Prefix) target {
	t.Helper()
	s, err := sessions.NewScripts(sessions.Clients{DB0: cc}, sessions.WithPrefix(p))
	if err != nil {
		t.Fatal(err)
	}
	return goRedisSessions{s: s, cc: cc, p: p}
}

type goRedisSessions struct {
	s  *sessions.Scripts
	cc *redis.ClusterClient
	p  sessions.Prefix
}

func (g goRedisSessions) preload(ctx context.Context) (runtime.PreloadReport, error) {
	return runtime.PreloadNodes(ctx, g.cc, sessions.AllScripts()...)
}

func (g goRedisSessions) loginAttempt(ctx context.Context, account, attempt string) (attemptResult, error) {
	k, err := sessions.NewLoginAttemptsKey(g.p, account)
	if err != nil {
		return attemptResult{}, err
	}
	r, err := g.s.LoginAttempt(ctx, k, sessions.LoginAttemptArgs{Limit: attemptLimit, Window: attemptSpan, Attempt: attempt})
	return attemptResult{Allowed: r.Allowed, Duplicate: r.Duplicate}, err
}

func (g goRedisSessions) sessionLock(ctx context.Context, id, owner string) (bool, error) {
	k, err := sessions.NewSessionLockKey(g.p, id)
	if err != nil {
		return false, err
	}
	return g.s.SessionLock(ctx, k, sessions.SessionLockArgs{Owner: owner})
}

func (g goRedisSessions) sessionSave(ctx context.Context, id, owner string, body []byte) (int64, error) {
	data, err := sessions.NewSessionDataKey(g.p, id)
	if err != nil {
		return 0, err
	}
	lock, err := sessions.NewSessionLockKey(g.p, id)
	if err != nil {
		return 0, err
	}
	return g.s.SessionSave(ctx, data, lock, sessions.SessionSaveArgs{Owner: owner, Body: body})
}

// rueidisClusterClient is a rueidis client of the cluster built as
// docs/clients.md recommends for Redis Cluster: every node as an init address
// (shuffled), so it finds the cluster with any node down; a short dial
// timeout and a write timeout, so a dead peer is noticed in a second; no
// client-side cache (scripts do not use it). rueidis follows MOVED and ASK
// itself and reloads its slot map when a node fails or answers MOVED.
func rueidisClusterClient(t *testing.T, cluster *redistest.Cluster) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:      cluster.Addrs(),
		ShuffleInit:      true,
		DisableCache:     true,
		Dialer:           net.Dialer{Timeout: 500 * time.Millisecond},
		ConnWriteTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// rueidisTarget runs the rueidis package on a rueidis client of its own.
func rueidisTarget(t *testing.T, ctx context.Context, cluster *redistest.Cluster, _ *redis.ClusterClient, p sessions.Prefix) target {
	t.Helper()
	conn, err := rueidisbackend.New(ctx, rueidisClusterClient(t, cluster))
	if err != nil {
		t.Fatal(err)
	}
	// The same test prefix in the rueidis package: its deployment prefix, made a test prefix.
	rp, err := rsessions.NewPrefix(strings.TrimPrefix(p.String(), "test:"))
	if err == nil {
		rp, err = rp.Test()
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := rsessions.NewScripts(rsessions.Clients{DB0: conn}, rsessions.WithPrefix(rp))
	if err != nil {
		t.Fatal(err)
	}
	return rueidisSessions{s: s, conn: conn, p: rp}
}

type rueidisSessions struct {
	s    *rsessions.Scripts
	conn *rueidisbackend.Conn
	p    rsessions.Prefix
}

func (r rueidisSessions) preload(ctx context.Context) (runtime.PreloadReport, error) {
	return rueidisbackend.PreloadNodes(ctx, r.conn, rsessions.AllScripts()...)
}

func (r rueidisSessions) loginAttempt(ctx context.Context, account, attempt string) (attemptResult, error) {
	k, err := rsessions.NewLoginAttemptsKey(r.p, account)
	if err != nil {
		return attemptResult{}, err
	}
	res, err := r.s.LoginAttempt(ctx, k, rsessions.LoginAttemptArgs{Limit: attemptLimit, Window: attemptSpan, Attempt: attempt})
	return attemptResult{Allowed: res.Allowed, Duplicate: res.Duplicate}, err
}

func (r rueidisSessions) sessionLock(ctx context.Context, id, owner string) (bool, error) {
	k, err := rsessions.NewSessionLockKey(r.p, id)
	if err != nil {
		return false, err
	}
	return r.s.SessionLock(ctx, k, rsessions.SessionLockArgs{Owner: owner})
}

func (r rueidisSessions) sessionSave(ctx context.Context, id, owner string, body []byte) (int64, error) {
	data, err := rsessions.NewSessionDataKey(r.p, id)
	if err != nil {
		return 0, err
	}
	lock, err := rsessions.NewSessionLockKey(r.p, id)
	if err != nil {
		return 0, err
	}
	return r.s.SessionSave(ctx, data, lock, rsessions.SessionSaveArgs{Owner: owner, Body: body})
}
