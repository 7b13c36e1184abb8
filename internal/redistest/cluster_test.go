package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A cluster of 3 primaries with a replica each: every primary serves slots and
// has one replica; a manual failover swaps a pair's roles; a slot migrated
// under a key moves the key, and the old owner then answers MOVED.
func TestClusterWithReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node cluster")
	}
	ctx := context.Background()
	c := StartClusterWith(t, ClusterConfig{Primaries: 3, Replicas: 1, NodeTimeout: 2 * time.Second})
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	view, err := c.View(ctx, c.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	primaries, replicas := 0, 0
	for _, n := range view {
		if n.Primary {
			primaries++
			if len(n.Slots) == 0 {
				t.Errorf("primary %s serves no slot", n.Addr)
			}
			reps, err := c.ReplicasOf(ctx, c.Server(n.Addr))
			if err != nil || len(reps) != 1 {
				t.Errorf("primary %s: replicas %v, %v; want one", n.Addr, reps, err)
			}
		} else {
			replicas++
		}
	}
	if primaries != 3 || replicas != 3 {
		t.Fatalf("%d primaries and %d replicas, want 3 and 3", primaries, replicas)
	}

	cc := c.Client(t)
	slot := int(cc.ClusterKeySlot(ctx, "k").Val())
	if err := cc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old, err := c.PrimaryOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	reps, _ := c.ReplicasOf(ctx, old)
	if err := c.Failover(ctx, reps[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx, clusterTimeout); err != nil {
		t.Fatal(err)
	}
	if now, err := c.PrimaryOf(ctx, slot); err != nil || now != reps[0] {
		t.Fatalf("after the failover slot %d is on %v (%v), want %s", slot, now, err, reps[0].Addr)
	}
	if v, err := cc.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET after the failover: %q %v", v, err)
	}

	var to *Server
	for _, n := range view {
		if s := c.Server(n.Addr); n.Primary && s != old && s != reps[0] {
			to = s
		}
	}
	m, err := c.StartMigration(ctx, slot, reps[0], to)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx, clusterTimeout); err != nil {
		t.Fatal(err)
	}
	if v, err := to.Admin().Do(ctx, "get", "k").Text(); err != nil || v != "v" {
		t.Fatalf("the key did not move with its slot: %q %v", v, err)
	}
	err = reps[0].Admin().Get(ctx, "k").Err()
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("MOVED %d %s", slot, to.Addr)) {
		t.Fatalf("the old owner answers %v, want MOVED to %s", err, to.Addr)
	}
	if v, err := cc.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET through the cluster client after the move: %q %v", v, err)
	}
}

func TestParseClusterNodes(t *testing.T) {
	raw := "07c3 127.0.0.1:30004@40004 slave e7d1 0 1426238317239 4 connected\n" +
		"e7d1 127.0.0.1:30001@40001,host myself,master - 0 0 1 connected 0-5460 [5461->-292f]\n" +
		"292f 127.0.0.1:30002@40002 master,fail? - 1426238316232 1426238318243 2 connected 5461 5463-10922\n"
	nodes, err := parseClusterNodes(raw)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", nodes)
	want := "[{ID:e7d1 Addr:127.0.0.1:30001 Myself:true Primary:true PrimaryID: Failing:false Connected:true Slots:[[0 5460]]} " +
		"{ID:292f Addr:127.0.0.1:30002 Myself:false Primary:true PrimaryID: Failing:true Connected:true Slots:[[5461 5461] [5463 10922]]} " +
		"{ID:07c3 Addr:127.0.0.1:30004 Myself:false Primary:false PrimaryID:e7d1 Failing:false Connected:true Slots:[]}]"
	if got != want {
		t.Fatalf("parsed\n%s\nwant\n%s", got, want)
	}
	if _, err := parseClusterNodes("short line"); err == nil {
		t.Fatal("a short line parsed")
	}
}
