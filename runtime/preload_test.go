package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// On a cluster with replicas, PreloadNodes loads every script on every primary
// and every replica, and says so node by node.
func TestPreloadNodesCoversReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node cluster")
	}
	ctx := context.Background()
	cluster := redistest.StartClusterWith(t, redistest.ClusterConfig{Primaries: 3, Replicas: 1})
	incr := mustScript(t, "incr", incrSrc, false)
	get := mustScript(t, "get", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", true)
	report, err := runtime.PreloadNodes(ctx, cluster.Client(t), incr, get)
	if err != nil {
		t.Fatalf("%v\n%s", err, report)
	}
	roles := map[string]int{}
	for _, n := range report.Nodes {
		roles[n.Role]++
		if strings.Join(n.Loaded, ",") != "incr,get" || n.Err != nil {
			t.Errorf("%s %s: loaded %v, %v", n.Role, n.Addr, n.Loaded, n.Err)
		}
		ok, err := cluster.Server(n.Addr).Admin().ScriptExists(ctx, incr.SHA1(), get.SHA1()).Result()
		if err != nil || !ok[0] || !ok[1] {
			t.Errorf("%s %s reported loaded, SCRIPT EXISTS says %v %v", n.Role, n.Addr, ok, err)
		}
	}
	if roles[runtime.RolePrimary] != 3 || roles[runtime.RoleReplica] != 3 {
		t.Fatalf("report covers %v, want 3 primaries and 3 replicas:\n%s", roles, report)
	}
	t.Logf("preload report:\n%s", report)
}

// A node that cannot load says why in its entry, and the error names it.
func TestPreloadNodesReportsFailures(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, redistest.WithACL("user default on nopass ~* -@all +ping +script|load\nuser limited on >limited-pass ~* -@all +ping\n"))
	incr := mustScript(t, "incr", incrSrc, false)

	report, err := runtime.PreloadNodes(ctx, srv.Client(0), incr)
	if err != nil || len(report.Nodes) != 1 || report.Nodes[0].Role != runtime.RoleServer || len(report.Nodes[0].Loaded) != 1 {
		t.Fatalf("a server that may load: %v\n%s", err, report)
	}
	limited := srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "limited", "limited-pass" })
	report, err = runtime.PreloadNodes(ctx, limited, incr)
	var se *runtime.ScriptError
	if !errors.As(err, &se) || se.Code != "NOPERM" || !strings.Contains(err.Error(), "server "+srv.Addr) {
		t.Fatalf("a user without SCRIPT LOAD: %v", err)
	}
	if n := report.Nodes[0]; n.Addr != srv.Addr || len(n.Loaded) != 0 || n.Err == nil {
		t.Fatalf("report: %+v", n)
	}
	if _, err := runtime.PreloadNodes(ctx, nil, incr); err == nil {
		t.Fatal("a nil client was accepted")
	}
}
