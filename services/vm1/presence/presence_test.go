package presence_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/vm1/presence"
	"github.com/redis/go-redis/v9"
)

func rtPresence(t *testing.T, scripts *vm1.Scripts) *presence.Presence {
	t.Helper()
	p, err := presence.New(scripts, "api-1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func rtKeys(t *testing.T, c presence.Connection) (conn, set string) {
	t.Helper()
	k, err := vm1.NewRTConnKey(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	s, err := vm1.NewRTUserConnectionsKey(c.UserID)
	if err != nil {
		t.Fatal(err)
	}
	return k.String(), s.String()
}

// A heartbeat writes both keys with their TTLs (90 s, 120 s); the connection is
// live, listed and kept exactly as long as its hash exists; a heartbeat after
// that revives it; the set outlives the last heartbeat by exactly 120 s.
func TestRealtimeHarnessHeartbeatExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	p := rtPresence(t, scripts)
	clock := h.Clock()
	user := uuid.NewString()

	c, st, err := p.Connect(ctx, user, 2)
	if err != nil || st.Connections != 1 || st.Revived {
		t.Fatalf("connect: %+v %v", st, err)
	}
	connKey, setKey := rtKeys(t, c)
	ks := h.Keyspace()
	wantHash := map[string]string{"user_id": user, "instance": "api-1", "last_seen": strconv.FormatInt(scripttest.T0.UnixMilli(), 10), "subscriptions_count": "2"}
	if e := ks[connKey]; e.TTL != vm1.RTConnTTL || !rtMapsEqual(e.Hash, wantHash) {
		t.Fatalf("connection hash %+v, want %v with TTL %v", e, wantHash, vm1.RTConnTTL)
	}
	if e := ks[setKey]; e.TTL != vm1.RTUserConnectionsTTL || len(e.ZSet) != 1 || e.ZSet[0] != (luatest.Member{Member: c.ID, Score: float64(scripttest.T0.UnixMilli())}) {
		t.Fatalf("user set %+v, want the connection at scripttest.T0 with TTL %v", e, vm1.RTUserConnectionsTTL)
	}

	clock.Advance(60 * time.Second)
	beat := clock.Now()
	if st, err := p.Heartbeat(ctx, c, 3); err != nil || st.Revived || st.Connections != 1 {
		t.Fatalf("heartbeat: %+v %v", st, err)
	}
	ks = h.Keyspace()
	if e := ks[connKey]; e.TTL != 90*time.Second || e.Hash["last_seen"] != strconv.FormatInt(beat.UnixMilli(), 10) || e.Hash["subscriptions_count"] != "3" {
		t.Fatalf("after the heartbeat: %+v", e)
	}
	if e := ks[setKey]; e.TTL != 120*time.Second || e.ZSet[0].Score != float64(beat.UnixMilli()) {
		t.Fatalf("after the heartbeat: %+v", e)
	}

	// Live up to last heartbeat + 90 s inclusive, as long as the hash exists.
	clock.Set(beat.Add(90 * time.Second))
	if _, ok := h.Keyspace()[connKey]; !ok {
		t.Fatal("the hash vanished at exactly 90 s (Redis keeps it until the clock is past its expiry)")
	}
	if ids, err := p.Connections(ctx, user, 10); err != nil || !slices.Equal(ids, []string{c.ID}) {
		t.Fatalf("connections at 90 s: %v %v", ids, err)
	}
	if r, err := p.Cleanup(ctx, user, 10); err != nil || r.Removed != 0 || r.More {
		t.Fatalf("cleanup at 90 s removed a live connection: %+v %v", r, err)
	}
	clock.Advance(time.Millisecond)
	if _, ok := h.Keyspace()[connKey]; ok {
		t.Fatal("the hash outlived 90 s")
	}
	if ids, err := p.Connections(ctx, user, 10); err != nil || len(ids) != 0 {
		t.Fatalf("a dead connection is listed: %v %v", ids, err)
	}
	// The member of a dead connection stays until cleanup or the set's expiry.
	if e := h.Keyspace()[setKey]; len(e.ZSet) != 1 {
		t.Fatalf("user set: %+v", e)
	}

	// A heartbeat of the dead connection brings it back and says so.
	back := clock.Now()
	if st, err := p.Heartbeat(ctx, c, 1); err != nil || !st.Revived || st.Connections != 1 {
		t.Fatalf("heartbeat after expiry: %+v %v", st, err)
	}
	clock.Set(back.Add(120 * time.Second))
	if _, ok := h.Keyspace()[setKey]; !ok {
		t.Fatal("the set vanished at exactly 120 s")
	}
	clock.Advance(time.Millisecond)
	if ks := h.Keyspace(); len(ks) != 0 {
		t.Fatalf("keys outlived their TTLs: %v", ks)
	}
}

func rtMapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Cleanup removes dead members in batches of the size asked, reports whether
// more remain, never touches live ones, and each run reads at most one batch.
func TestRealtimeHarnessCleanupInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, sc, scripts := scripttest.VM1Harness(t)
	p := rtPresence(t, scripts)
	clock := h.Clock()
	user := uuid.NewString()

	var live []string
	for i := 0; i < 25; i++ {
		if _, _, err := p.Connect(ctx, user, 0); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
	}
	clock.Set(scripttest.T0.Add(60 * time.Second))
	for i := 0; i < 5; i++ {
		c, _, err := p.Connect(ctx, user, 0)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, c.ID)
		clock.Advance(time.Millisecond)
	}
	// The last of the 25 beat at scripttest.T0+24ms: all 25 are dead from scripttest.T0+90.025s on.
	clock.Set(scripttest.T0.Add(90*time.Second + 25*time.Millisecond))
	runsBefore := len(sc.Results())
	var got []presence.Cleaned
	for {
		r, err := p.Cleanup(ctx, user, 10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
		if !r.More || len(got) > 10 {
			break
		}
	}
	want := []presence.Cleaned{{Removed: 10, More: true}, {Removed: 10, More: true}, {Removed: 5, More: false}}
	if !slices.Equal(got, want) {
		t.Fatalf("cleanup batches %+v, want %+v", got, want)
	}
	if r, err := p.Cleanup(ctx, user, 10); err != nil || r != (presence.Cleaned{}) {
		t.Fatalf("cleanup of a clean set: %+v %v", r, err)
	}
	for _, res := range sc.Results()[runsBefore:] {
		for _, c := range res.Commands {
			switch c.Name {
			case "zrange":
				if !slices.Contains(c.Args, "LIMIT") || c.Args[len(c.Args)-1] != "10" {
					t.Errorf("cleanup ran an unbounded ZRANGE: %v", c.Args)
				}
			case "zrem", "zcount", "time":
			default:
				t.Errorf("cleanup sent %s", strings.ToUpper(c.Name))
			}
		}
	}
	ids, err := p.Connections(ctx, user, 100)
	if err != nil || !slices.Equal(ids, live) {
		t.Fatalf("live connections %v, want %v (%v)", ids, live, err)
	}
	if _, set := rtKeys(t, presence.Connection{ID: live[0], UserID: user}); len(h.Keyspace()[set].ZSet) != 5 {
		t.Fatalf("the set holds %d members, want the 5 live ones", len(h.Keyspace()[set].ZSet))
	}
	// Connections honours its limit, oldest heartbeat first.
	if ids, err := p.Connections(ctx, user, 2); err != nil || !slices.Equal(ids, live[:2]) {
		t.Fatalf("connections limit 2: %v %v", ids, err)
	}
}

// A duplicate disconnect is harmless: it says so and changes nothing.
func TestRealtimeHarnessDuplicateDisconnect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	p := rtPresence(t, scripts)
	user := uuid.NewString()
	c1, _, err := p.Connect(ctx, user, 1)
	if err != nil {
		t.Fatal(err)
	}
	c2, _, err := p.Connect(ctx, user, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := p.Disconnect(ctx, c1); err != nil || d != (presence.Disconnected{Duplicate: false, Remaining: 1}) {
		t.Fatalf("disconnect: %+v %v", d, err)
	}
	before := h.Keyspace()
	if d, err := p.Disconnect(ctx, c1); err != nil || d != (presence.Disconnected{Duplicate: true, Remaining: 1}) {
		t.Fatalf("duplicate disconnect: %+v %v", d, err)
	}
	if diff := luatest.DiffKeyspaces(h.Keyspace(), before, 0); diff != "" {
		t.Fatalf("a duplicate disconnect changed the keyspace:\n%s", diff)
	}
	if ids, _ := p.Connections(ctx, user, 10); !slices.Equal(ids, []string{c2.ID}) {
		t.Fatalf("connections %v, want only %s", ids, c2.ID)
	}
	if d, err := p.Disconnect(ctx, c2); err != nil || d != (presence.Disconnected{Remaining: 0}) {
		t.Fatalf("last disconnect: %+v %v", d, err)
	}
	if ks := h.Keyspace(); len(ks) != 0 {
		t.Fatalf("keys left after every connection left: %v", ks)
	}
	if d, err := p.Disconnect(ctx, c2); err != nil || !d.Duplicate {
		t.Fatalf("duplicate of the last disconnect: %+v %v", d, err)
	}
}

// A connection id cannot be heartbeaten or disconnected as another user's, and
// keys that do not belong to the arguments are refused, without any write.
func TestRealtimeHarnessWrongUserAndBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, sc, scripts := scripttest.VM1Harness(t)
	p := rtPresence(t, scripts)
	owner, intruder := uuid.NewString(), uuid.NewString()
	c, _, err := p.Connect(ctx, owner, 1)
	if err != nil {
		t.Fatal(err)
	}
	before := h.Keyspace()
	forged, err := presence.Resume(c.ID, intruder)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Heartbeat(ctx, forged, 1); !errors.Is(err, presence.ErrWrongUser) || !errors.Is(err, vm1.ErrWrongUser) {
		t.Fatalf("heartbeat as another user: %v", err)
	}
	if _, err := p.Disconnect(ctx, forged); !errors.Is(err, presence.ErrWrongUser) {
		t.Fatalf("disconnect as another user: %v", err)
	}
	if diff := luatest.DiffKeyspaces(h.Keyspace(), before, 0); diff != "" {
		t.Fatalf("a refused call wrote:\n%s", diff)
	}

	// The generated wrapper accepts any conn and set keys; the script checks them.
	otherConn, _ := vm1.NewRTConnKey(uuid.NewString())
	set, _ := vm1.NewRTUserConnectionsKey(owner)
	otherSet, _ := vm1.NewRTUserConnectionsKey(intruder)
	conn, _ := vm1.NewRTConnKey(c.ID)
	if _, err := scripts.RTHeartbeat(ctx, otherConn, set, vm1.RTHeartbeatArgs{ConnectionID: c.ID, UserID: owner, Instance: "api-1"}); !errors.Is(err, vm1.ErrBadArg) {
		t.Fatalf("heartbeat with another connection's key: %v", err)
	}
	if _, err := scripts.RTHeartbeat(ctx, conn, otherSet, vm1.RTHeartbeatArgs{ConnectionID: c.ID, UserID: owner, Instance: "api-1"}); !errors.Is(err, vm1.ErrBadArg) {
		t.Fatalf("heartbeat with another user's set: %v", err)
	}
	if _, err := scripts.RTDisconnect(ctx, conn, otherSet, vm1.RTDisconnectArgs{ConnectionID: c.ID, UserID: owner}); !errors.Is(err, vm1.ErrBadArg) {
		t.Fatalf("disconnect with another user's set: %v", err)
	}
	if diff := luatest.DiffKeyspaces(h.Keyspace(), before, 0); diff != "" {
		t.Fatalf("a refused call wrote:\n%s", diff)
	}

	// Refused in Go, before any script runs.
	runs := len(sc.Results())
	for name, f := range map[string]func() error{
		"subscriptions -1": func() error { _, err := p.Heartbeat(ctx, c, -1); return err },
		"subscriptions too many": func() error {
			_, err := p.Heartbeat(ctx, c, presence.MaxSubscriptions+1)
			return err
		},
		"batch 0":        func() error { _, err := p.Cleanup(ctx, owner, 0); return err },
		"batch 1001":     func() error { _, err := p.Cleanup(ctx, owner, 1001); return err },
		"limit 0":        func() error { _, err := p.Connections(ctx, owner, 0); return err },
		"user not uuid":  func() error { _, _, err := p.Connect(ctx, "user:*", 1); return err },
		"empty conn":     func() error { _, err := p.Heartbeat(ctx, presence.Connection{}, 1); return err },
		"empty conn dis": func() error { _, err := p.Disconnect(ctx, presence.Connection{}); return err },
	} {
		if err := f(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := presence.Resume("not-a-uuid", owner); !errors.Is(err, runtime.ErrInvalidKeyPart) {
		t.Errorf("resume with a bad id: %v", err)
	}
	if _, err := presence.New(scripts, "api 1"); err == nil {
		t.Error("an instance name with a space was accepted")
	}
	if n := len(sc.Results()); n != runs {
		t.Fatalf("refused input reached %d script runs", n-runs)
	}
}

// On real Redis: connect, heartbeat, list, duplicate disconnect, and cleanup in
// batches of members whose heartbeat the test set 91 s in the past; every key
// keeps a TTL.
func TestRealtimePresenceOnRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, scripts, _ := scripttest.VM1(t)
	db1 := srv.Client(vm1.DB1)
	p := rtPresence(t, scripts)
	user := uuid.NewString()

	var conns []presence.Connection
	for i := 0; i < 3; i++ {
		c, st, err := p.Connect(ctx, user, i)
		if err != nil || st.Connections != int64(i+1) {
			t.Fatalf("connect %d: %+v %v", i, st, err)
		}
		conns = append(conns, c)
	}
	connKey, setKey := rtKeys(t, conns[0])
	if ttl := db1.PTTL(ctx, connKey).Val(); ttl <= 89*time.Second || ttl > 90*time.Second {
		t.Fatalf("connection TTL %v, want 90 s", ttl)
	}
	if ttl := db1.PTTL(ctx, setKey).Val(); ttl <= 119*time.Second || ttl > 120*time.Second {
		t.Fatalf("set TTL %v, want 120 s", ttl)
	}
	if st, err := p.Heartbeat(ctx, conns[1], 7); err != nil || st.Revived || st.Connections != 3 {
		t.Fatalf("heartbeat: %+v %v", st, err)
	}
	if v := db1.HGet(ctx, rtConnKey(t, conns[1]), "subscriptions_count").Val(); v != "7" {
		t.Fatalf("subscriptions_count %q, want 7", v)
	}

	// Test-only: 30 members of connections that died 91 s ago (their hashes are
	// long gone), written straight into the set the heartbeat created.
	old := scripttest.RedisNow(t, db1).Add(-91 * time.Second).UnixMilli()
	var stale []redis.Z
	for i := 0; i < 30; i++ {
		stale = append(stale, redis.Z{Score: float64(old - int64(i)), Member: uuid.NewString()})
	}
	if err := db1.ZAdd(ctx, setKey, stale...).Err(); err != nil {
		t.Fatal(err)
	}
	ids, err := p.Connections(ctx, user, 100)
	if err != nil || len(ids) != 3 {
		t.Fatalf("connections %v (%v): want the 3 live ones only", ids, err)
	}
	var removed []int64
	for more := true; more; {
		r, err := p.Cleanup(ctx, user, 7)
		if err != nil {
			t.Fatal(err)
		}
		removed, more = append(removed, r.Removed), r.More
		if len(removed) > 10 {
			t.Fatal("cleanup never finished")
		}
	}
	if !slices.Equal(removed, []int64{7, 7, 7, 7, 2}) {
		t.Fatalf("cleanup batches removed %v, want 7,7,7,7,2", removed)
	}
	if n := db1.ZCard(ctx, setKey).Val(); n != 3 {
		t.Fatalf("set holds %d members, want the 3 live ones", n)
	}

	if d, err := p.Disconnect(ctx, conns[0]); err != nil || d != (presence.Disconnected{Remaining: 2}) {
		t.Fatalf("disconnect: %+v %v", d, err)
	}
	if d, err := p.Disconnect(ctx, conns[0]); err != nil || d != (presence.Disconnected{Duplicate: true, Remaining: 2}) {
		t.Fatalf("duplicate disconnect: %+v %v", d, err)
	}
	if db1.Exists(ctx, connKey).Val() != 0 {
		t.Fatal("the disconnected connection's hash is still there")
	}
	scripttest.AuditTTLs(t, db1, vm1.Keys)
}

func rtConnKey(t *testing.T, c presence.Connection) string {
	k, _ := rtKeys(t, c)
	return k
}

// The same presence scenario on the harness and on Redis gives equal replies and
// an equal keyspace.
func TestRealtimePresenceConformance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, realScripts, _ := scripttest.VM1(t)
	db1 := srv.Client(vm1.DB1)
	h, _, harnessScripts := scripttest.VM1Harness(t)
	real, harness := rtPresence(t, realScripts), rtPresence(t, harnessScripts)
	user, other := uuid.NewString(), uuid.NewString()
	a, _ := presence.Resume(uuid.NewString(), user)
	b, _ := presence.Resume(uuid.NewString(), user)
	c, _ := presence.Resume(uuid.NewString(), other)
	forged, _ := presence.Resume(a.ID, other)

	steps := []struct {
		name string
		run  func(p *presence.Presence) (any, error)
	}{
		{"heartbeat a", func(p *presence.Presence) (any, error) { return p.Heartbeat(ctx, a, 1) }},
		{"heartbeat b", func(p *presence.Presence) (any, error) { return p.Heartbeat(ctx, b, 2) }},
		{"heartbeat c", func(p *presence.Presence) (any, error) { return p.Heartbeat(ctx, c, 0) }},
		{"heartbeat a again", func(p *presence.Presence) (any, error) { return p.Heartbeat(ctx, a, 4) }},
		{"heartbeat a as other", func(p *presence.Presence) (any, error) { return p.Heartbeat(ctx, forged, 4) }},
		{"connections", func(p *presence.Presence) (any, error) { return p.Connections(ctx, user, 10) }},
		{"connections limit 1", func(p *presence.Presence) (any, error) { return p.Connections(ctx, user, 1) }},
		{"cleanup", func(p *presence.Presence) (any, error) { return p.Cleanup(ctx, user, 5) }},
		{"disconnect b", func(p *presence.Presence) (any, error) { return p.Disconnect(ctx, b) }},
		{"disconnect b again", func(p *presence.Presence) (any, error) { return p.Disconnect(ctx, b) }},
		{"disconnect c", func(p *presence.Presence) (any, error) { return p.Disconnect(ctx, c) }},
	}
	var lag scripttest.Lag
	for _, s := range steps {
		lag.Sync(t, h, db1)
		want, wantErr := s.run(real)
		lag.Step()
		got, gotErr := s.run(harness)
		if fmt.Sprint(want) != fmt.Sprint(got) || rtErrCode(wantErr) != rtErrCode(gotErr) {
			t.Errorf("%s: Redis %v, %v; harness %v, %v", s.name, want, wantErr, got, gotErr)
		}
	}
	scripttest.CompareKeyspaces(t, ctx, db1, h, map[string]float64{"last_seen": 1}, lag.Max())
}

// rtErrCode is the error reply's code, or the error text for other errors.
func rtErrCode(err error) string {
	var se *runtime.ScriptError
	if errors.As(err, &se) {
		return se.Code
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
