package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Node roles in a PreloadReport.
const (
	RoleServer  = "server"  // a single server (*redis.Client)
	RoleShard   = "shard"   // a shard of a Ring
	RolePrimary = "primary" // a cluster primary
	RoleReplica = "replica" // a cluster replica
)

// NodeLoad is what PreloadNodes did on one server.
type NodeLoad struct {
	Addr   string
	Role   string   // RoleServer, RoleShard, RolePrimary or RoleReplica
	Loaded []string // the scripts SCRIPT LOAD loaded here, in the order given
	Err    error    // the first load that failed here; the scripts after it were not tried
}

// PreloadReport says, node by node, what PreloadNodes loaded where.
type PreloadReport struct {
	Nodes []NodeLoad // sorted by role (primaries first), then address
}

// Err joins the errors of every node that failed, each naming its node; nil
// when every node loaded every script.
func (r PreloadReport) Err() error {
	var errs []error
	for _, n := range r.Nodes {
		if n.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", n.Role, n.Addr, n.Err))
		}
	}
	return errors.Join(errs...)
}

// String is one line per node: its role, address, how many scripts it loaded
// and its error.
func (r PreloadReport) String() string {
	var b strings.Builder
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, "%s %s: %d loaded", n.Role, n.Addr, len(n.Loaded))
		if n.Err != nil {
			fmt.Fprintf(&b, ", failed: %v", n.Err)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// PreloadNodes is Preload that reports per node: it runs SCRIPT LOAD of every
// script on every node that may run it (a single server; every shard of a Ring;
// every primary and every replica of a cluster, so that a replica promoted by a
// failover already holds the scripts) and says what it loaded where. A node
// that fails does not stop the others; the returned error is the report's Err.
// Nodes that join later (a new replica, a restarted node) load on their first
// NOSCRIPT, as every call recovers from it.
func PreloadNodes(ctx context.Context, c redis.UniversalClient, scripts ...*Script) (PreloadReport, error) {
	var (
		mu sync.Mutex
		r  PreloadReport
	)
	each := func(role string) func(ctx context.Context, node *redis.Client) error {
		return func(ctx context.Context, node *redis.Client) error {
			n := loadAll(ctx, node, role, scripts)
			mu.Lock()
			r.Nodes = append(r.Nodes, n)
			mu.Unlock()
			return nil // every node is tried; its error is in its NodeLoad
		}
	}
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		if err = c.ForEachMaster(ctx, each(RolePrimary)); err == nil {
			err = c.ForEachSlave(ctx, each(RoleReplica))
		}
	case *redis.Ring:
		err = c.ForEachShard(ctx, each(RoleShard))
	case *redis.Client:
		_ = each(RoleServer)(ctx, c)
	default:
		return r, fmt.Errorf("runtime: PreloadNodes of a %T: want a *redis.Client, *redis.Ring or *redis.ClusterClient", c)
	}
	if err != nil {
		// The client could not say which nodes there are (no node answered).
		return r, fmt.Errorf("runtime: preload: the nodes of the client: %w", err)
	}
	sort.Slice(r.Nodes, func(i, j int) bool {
		a, b := r.Nodes[i], r.Nodes[j]
		if a.Role != b.Role {
			return roleOrder(a.Role) < roleOrder(b.Role)
		}
		return a.Addr < b.Addr
	})
	return r, r.Err()
}

func roleOrder(role string) int {
	switch role {
	case RolePrimary:
		return 0
	case RoleReplica:
		return 1
	}
	return 2
}

// loadAll loads scripts on one node, stopping at the first failure.
func loadAll(ctx context.Context, node *redis.Client, role string, scripts []*Script) NodeLoad {
	n := NodeLoad{Addr: node.Options().Addr, Role: role}
	for _, s := range scripts {
		if s.function != "" {
			n.Err = fmt.Errorf("script %s: %w", s.name, ErrFunctionsMode)
			return n
		}
		sha, err := node.ScriptLoad(ctx, s.src).Result()
		if err != nil {
			n.Err = replyError(s.name, fmt.Errorf("SCRIPT LOAD: %w", err))
			return n
		}
		if sha != s.sha {
			n.Err = fmt.Errorf("script %s: SCRIPT LOAD answered %s, want %s: %w", s.name, sha, s.sha, ErrSHAMismatch)
			return n
		}
		n.Loaded = append(n.Loaded, s.name)
	}
	return n
}
