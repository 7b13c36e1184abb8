package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster started by a test: its primaries and replicas, each
// a Server, all stopped when the test ends.
type Cluster struct {
	t     testing.TB
	Nodes []*Server
	cfg   ClusterConfig
}

// ClusterConfig shapes a cluster.
type ClusterConfig struct {
	Primaries int // at least 3
	Replicas  int // replicas of each primary
	// NodeTimeout is cluster-node-timeout: how long a node may not answer before
	// the others count it as failing (and its replica takes over). Default 5s.
	NodeTimeout time.Duration
	// ACL, when set, is every node's aclfile (the generated one, say, whose
	// default user is off); AdminUser and AdminPassword name a user of it with
	// every right, as which the cluster is created, the helpers (Admin, View,
	// Converged, Failover, ...) ask, and the replicas replicate.
	ACL                      string
	AdminUser, AdminPassword string
}

// clusterTimeout bounds how long a cluster may take to form or to converge.
const clusterTimeout = 60 * time.Second

// StartCluster starts n primaries (n >= 3) and no replicas; see StartClusterWith.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartClusterWith(t, ClusterConfig{Primaries: n})
}

// StartClusterWith starts cfg.Primaries primaries and cfg.Replicas replicas of
// each, every one a redis-server with cluster mode on, joins them with
// redis-cli --cluster create, and waits until the cluster has converged (see
// Converged). Every process is killed when the test ends.
func StartClusterWith(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	if cfg.Primaries < 3 {
		t.Fatalf("a cluster needs at least 3 primaries, got %d", cfg.Primaries)
	}
	if cfg.Replicas < 0 {
		t.Fatalf("replicas per primary: %d", cfg.Replicas)
	}
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = 5 * time.Second
	}
	c := &Cluster{t: t, cfg: cfg}
	args := []string{"--cluster", "create"}
	for i := 0; i < cfg.Primaries*(1+cfg.Replicas); i++ {
		opts := []Option{WithConfig("cluster-enabled yes", "cluster-config-file nodes.conf",
			"cluster-node-timeout "+strconv.FormatInt(cfg.NodeTimeout.Milliseconds(), 10),
			// A replica is listed in CLUSTER SLOTS (where clients find it) only once its
			// replication offset is above 0; pings move it without any write.
			"repl-ping-replica-period 1")}
		if cfg.ACL != "" {
			opts = append(opts, WithACL(cfg.ACL), WithAdmin(cfg.AdminUser, cfg.AdminPassword),
				WithConfig("masteruser "+cfg.AdminUser, "masterauth "+cfg.AdminPassword))
		}
		s := Start(t, opts...)
		c.Nodes = append(c.Nodes, s)
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(cfg.Replicas), "--cluster-yes")
	if cfg.ACL != "" {
		args = append([]string{"--user", cfg.AdminUser, "--pass", cfg.AdminPassword, "--no-auth-warning"}, args...)
	}
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitConverged(context.Background(), clusterTimeout); err != nil {
		t.Fatalf("cluster did not form: %v", err)
	}
	return c
}

// Client is a cluster client of all nodes, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRedirects: 8, ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Addrs are the addresses of every node, running or not.
func (c *Cluster) Addrs() []string {
	var addrs []string
	for _, s := range c.Nodes {
		addrs = append(addrs, s.Addr)
	}
	return addrs
}

// Server is the node listening on addr, or nil.
func (c *Cluster) Server(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// ClusterNode is one line of CLUSTER NODES as one node sees it.
type ClusterNode struct {
	ID        string
	Addr      string // 127.0.0.1:port
	Myself    bool
	Primary   bool
	PrimaryID string // a replica's primary; "" for a primary
	Failing   bool   // flagged fail or fail? (suspected)
	Connected bool   // the link to it is up
	Slots     [][2]int
}

// Owns reports whether the node serves slot.
func (n ClusterNode) Owns(slot int) bool {
	for _, r := range n.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// View is the cluster as node s sees it (CLUSTER NODES), sorted by address.
func (c *Cluster) View(ctx context.Context, s *Server) ([]ClusterNode, error) {
	raw, err := s.Admin().ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES on %s: %w", s.Addr, err)
	}
	return parseClusterNodes(raw)
}

func parseClusterNodes(raw string) ([]ClusterNode, error) {
	var nodes []ClusterNode
	for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q: want at least 8 fields", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		n := ClusterNode{ID: f[0], Addr: addr, Connected: f[7] == "connected"}
		for _, flag := range strings.Split(f[2], ",") {
			switch flag {
			case "myself":
				n.Myself = true
			case "master":
				n.Primary = true
			case "fail", "fail?":
				n.Failing = true
			}
		}
		if f[3] != "-" {
			n.PrimaryID = f[3]
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated or imported: its owner is still listed
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES slot %q: %w", r, err)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil {
					return nil, fmt.Errorf("CLUSTER NODES slot %q: %w", r, err)
				}
			}
			n.Slots = append(n.Slots, [2]int{a, b})
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Addr < nodes[j].Addr })
	return nodes, nil
}

// running are the nodes whose process is up.
func (c *Cluster) running() []*Server {
	var out []*Server
	for _, s := range c.Nodes {
		if s.Running() {
			out = append(out, s)
		}
	}
	return out
}

// Converged returns nil when the running nodes agree on a healthy cluster, else
// what is not yet so: every running node reports cluster_state:ok, knows every
// node and sees every slot served by a running primary that is not failing; all
// of them see the same owner for every slot and each node in the role it says it
// has; every running replica's link to its primary is up with no sync in
// progress, and every running node lists it in CLUSTER SLOTS, where clients
// learn the topology.
func (c *Cluster) Converged(ctx context.Context) error {
	var owners map[int]string // first slot of each range -> owner address, as the first node sees it
	var first string
	roles := map[string]string{} // address -> its role as the node itself says ("primary" or "replica of ID")
	views := map[string][]ClusterNode{}
	for _, s := range c.running() {
		cl := s.Admin()
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", s.Addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state is not ok", s.Addr)
		}
		if !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes))+"\r") {
			return fmt.Errorf("%s does not know all %d nodes yet", s.Addr, len(c.Nodes))
		}
		view, err := c.View(ctx, s)
		if err != nil {
			return err
		}
		views[s.Addr] = view
		for _, n := range view {
			if n.Myself {
				roles[n.Addr] = role(n)
			}
		}
		seen := map[int]string{}
		covered := 0
		for _, n := range view {
			if len(n.Slots) == 0 {
				continue
			}
			if !n.Primary || n.Failing {
				return fmt.Errorf("%s sees %s serving slots while not a healthy primary", s.Addr, n.Addr)
			}
			if srv := c.Server(n.Addr); srv == nil || !srv.Running() {
				return fmt.Errorf("%s sees slots on %s, which is not running", s.Addr, n.Addr)
			}
			for _, r := range n.Slots {
				seen[r[0]] = n.Addr
				covered += r[1] - r[0] + 1
			}
		}
		if covered != 16384 {
			return fmt.Errorf("%s sees %d of 16384 slots served", s.Addr, covered)
		}
		if owners == nil {
			owners, first = seen, s.Addr
		} else if fmt.Sprint(sortedOwners(owners)) != fmt.Sprint(sortedOwners(seen)) {
			return fmt.Errorf("%s and %s see different slot owners", first, s.Addr)
		}
		//lint:ignore SA1019 go-redis builds its slot map from CLUSTER SLOTS: wait for what clients see
		slots, err := cl.ClusterSlots(ctx).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER SLOTS: %w", s.Addr, err)
		}
		listed := map[string]bool{}
		for _, r := range slots {
			for _, n := range r.Nodes[1:] {
				listed[n.Addr] = true
			}
		}
		for _, n := range view {
			if srv := c.Server(n.Addr); !n.Primary && srv != nil && srv.Running() && !listed[n.Addr] {
				return fmt.Errorf("%s does not list replica %s in CLUSTER SLOTS yet", s.Addr, n.Addr)
			}
		}
		repl, err := cl.Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", s.Addr, err)
		}
		if strings.Contains(repl, "role:slave") &&
			(!strings.Contains(repl, "master_link_status:up") || !strings.Contains(repl, "master_sync_in_progress:0")) {
			return fmt.Errorf("%s: replica not in sync with its primary", s.Addr)
		}
	}
	// Every running node sees every other's role as that node says it.
	for addr, view := range views {
		for _, n := range view {
			if want, ok := roles[n.Addr]; ok && role(n) != want {
				return fmt.Errorf("%s sees %s as %s; it is %s", addr, n.Addr, role(n), want)
			}
		}
	}
	return nil
}

func role(n ClusterNode) string {
	if n.Primary {
		return "primary"
	}
	return "replica of " + n.PrimaryID
}

func sortedOwners(m map[int]string) []string {
	var out []string
	for slot, addr := range m {
		out = append(out, fmt.Sprintf("%05d=%s", slot, addr))
	}
	sort.Strings(out)
	return out
}

// WaitConverged waits until Converged returns nil, or returns its last answer
// when timeout passes.
func (c *Cluster) WaitConverged(ctx context.Context, timeout time.Duration) error {
	var last error
	if pollEvery(ctx, timeout, 50*time.Millisecond, func() bool { last = c.Converged(ctx); return last == nil }) {
		return nil
	}
	return fmt.Errorf("not converged after %s: %w", timeout, last)
}

// PrimaryOf is the running primary serving slot, as the running nodes see it.
func (c *Cluster) PrimaryOf(ctx context.Context, slot int) (*Server, error) {
	for _, s := range c.running() {
		view, err := c.View(ctx, s)
		if err != nil {
			continue
		}
		for _, n := range view {
			if n.Primary && !n.Failing && n.Owns(slot) {
				if srv := c.Server(n.Addr); srv != nil && srv.Running() {
					return srv, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("no running primary serves slot %d", slot)
}

// ReplicasOf are the running replicas of primary, as primary sees them.
func (c *Cluster) ReplicasOf(ctx context.Context, primary *Server) ([]*Server, error) {
	view, err := c.View(ctx, primary)
	if err != nil {
		return nil, err
	}
	var id string
	for _, n := range view {
		if n.Myself {
			id = n.ID
		}
	}
	var out []*Server
	for _, n := range view {
		if n.PrimaryID == id {
			if srv := c.Server(n.Addr); srv != nil && srv.Running() {
				out = append(out, srv)
			}
		}
	}
	return out, nil
}

// ID is the node ID of s (CLUSTER MYID).
func (c *Cluster) ID(ctx context.Context, s *Server) (string, error) {
	return s.Admin().Do(ctx, "cluster", "myid").Text()
}

// Failover runs CLUSTER FAILOVER on replica (a manual failover: the primary
// stops writes, the replica catches up and takes over with no write lost) and
// waits until replica reports itself a primary. It does not wait for the
// cluster to converge; WaitConverged does.
func (c *Cluster) Failover(ctx context.Context, replica *Server) error {
	if err := replica.Admin().Do(ctx, "cluster", "failover").Err(); err != nil {
		return fmt.Errorf("CLUSTER FAILOVER on %s: %w", replica.Addr, err)
	}
	return c.waitPrimary(ctx, replica)
}

// waitPrimary waits until s reports role:master.
func (c *Cluster) waitPrimary(ctx context.Context, s *Server) error {
	ok := pollEvery(ctx, clusterTimeout, 20*time.Millisecond, func() bool {
		info, err := s.Admin().Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:master")
	})
	if !ok {
		return fmt.Errorf("%s did not become a primary within %s", s.Addr, clusterTimeout)
	}
	return nil
}

// SlotMigration moves one slot from a primary to another while the cluster
// serves it, the way redis-cli --cluster reshard does: the target imports the
// slot, the source migrates it, its keys move with MIGRATE, and then every
// primary learns the new owner. Between those steps the source answers ASK for
// keys it no longer holds, and the target serves them to clients that send
// ASKING; afterwards the source answers MOVED.
type SlotMigration struct {
	c            *Cluster
	Slot         int
	From, To     *Server
	fromID, toID string
}

// StartMigration marks slot as importing on to and migrating on from.
func (c *Cluster) StartMigration(ctx context.Context, slot int, from, to *Server) (*SlotMigration, error) {
	m := &SlotMigration{c: c, Slot: slot, From: from, To: to}
	var err error
	if m.fromID, err = c.ID(ctx, from); err != nil {
		return nil, err
	}
	if m.toID, err = c.ID(ctx, to); err != nil {
		return nil, err
	}
	if err := to.Admin().Do(ctx, "cluster", "setslot", slot, "importing", m.fromID).Err(); err != nil {
		return nil, fmt.Errorf("SETSLOT %d IMPORTING on %s: %w", slot, to.Addr, err)
	}
	if err := from.Admin().Do(ctx, "cluster", "setslot", slot, "migrating", m.toID).Err(); err != nil {
		return nil, fmt.Errorf("SETSLOT %d MIGRATING on %s: %w", slot, from.Addr, err)
	}
	return m, nil
}

// MoveKeys moves at most n of the slot's keys still on the source, in one
// MIGRATE, and reports how many it moved.
func (m *SlotMigration) MoveKeys(ctx context.Context, n int) (int, error) {
	from := m.From.Admin()
	keys, err := from.ClusterGetKeysInSlot(ctx, m.Slot, n).Result()
	if err != nil {
		return 0, fmt.Errorf("GETKEYSINSLOT %d on %s: %w", m.Slot, m.From.Addr, err)
	}
	if len(keys) == 0 {
		return 0, nil
	}
	args := []any{"migrate", "127.0.0.1", m.To.Port, "", 0, 10000, "keys"}
	for _, k := range keys {
		args = append(args, k)
	}
	if err := from.Do(ctx, args...).Err(); err != nil {
		return 0, fmt.Errorf("MIGRATE of %d keys of slot %d from %s to %s: %w", len(keys), m.Slot, m.From.Addr, m.To.Addr, err)
	}
	return len(keys), nil
}

// Finish moves the keys left and assigns the slot to the target: on the target
// first, then the source, then every other running primary.
func (m *SlotMigration) Finish(ctx context.Context) error {
	for {
		n, err := m.MoveKeys(ctx, 100)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	nodes := []*Server{m.To, m.From}
	for _, s := range m.c.running() {
		if s == m.To || s == m.From {
			continue
		}
		info, err := s.Admin().Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", s.Addr, err)
		}
		if strings.Contains(info, "role:master") {
			nodes = append(nodes, s)
		}
	}
	for _, s := range nodes {
		if err := s.Admin().Do(ctx, "cluster", "setslot", m.Slot, "node", m.toID).Err(); err != nil {
			return fmt.Errorf("SETSLOT %d NODE on %s: %w", m.Slot, s.Addr, err)
		}
	}
	return nil
}

// Stat is one field of a node's INFO section (e.g. Stat(ctx, "commandstats",
// "cmdstat_asking", "calls")), 0 when the node has none.
func Stat(ctx context.Context, s *Server, section, name, field string) (int64, error) {
	info, err := s.Admin().Info(ctx, section).Result()
	if err != nil {
		return 0, fmt.Errorf("%s: INFO %s: %w", s.Addr, section, err)
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || k != name {
			continue
		}
		for _, kv := range strings.Split(v, ",") {
			fk, fv, _ := strings.Cut(kv, "=")
			if fk == field {
				return strconv.ParseInt(fv, 10, 64)
			}
		}
	}
	return 0, nil
}

// pollEvery is WaitFor with its own polling interval.
func pollEvery(ctx context.Context, timeout, every time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
		}
	}
}
