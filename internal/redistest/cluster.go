package redistest

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of primaries started by a test, each a Server.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n primaries (n >= 3) with cluster mode on, joins them with
// redis-cli --cluster create, and waits until every node reports cluster_state:ok.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 3 {
		t.Fatalf("a cluster needs at least 3 primaries, got %d", n)
	}
	c := &Cluster{}
	args := []string{"--cluster", "create"}
	for i := 0; i < n; i++ {
		s := Start(t, WithConfig("cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 5000"))
		c.Nodes = append(c.Nodes, s)
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx := context.Background()
	for _, s := range c.Nodes {
		node := s.Client(0)
		ok := WaitFor(ctx, startTimeout, func() bool {
			info, err := node.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
		if !ok {
			t.Fatalf("cluster node %s never reported cluster_state:ok", s.Addr)
		}
	}
	return c
}

// Client is a cluster client of all nodes, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	var addrs []string
	for _, s := range c.Nodes {
		addrs = append(addrs, s.Addr)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 8, ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}
