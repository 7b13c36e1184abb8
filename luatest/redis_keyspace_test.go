package luatest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRedisKeyspace(t *testing.T) {
	client := startRedis(t)
	ctx := context.Background()
	flush(t, client)
	srv := NewServer(NewClock(time.Now()))
	setup := [][]any{
		{"set", "app:str", "hello", "ex", 100},
		{"set", "app:bin", "\x00\xff"},
		{"hset", "app:hash", "a", "1", "b", "2"},
		{"pexpire", "app:hash", 5000},
		{"zadd", "app:zset", 2, "b", 1, "a", 1, "c", "inf", "top", "-1.5", "neg"},
		{"set", "other", "x"},
	}
	for _, c := range setup {
		if err := client.Do(ctx, c...).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Do(c...); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range [][]any{
		{"rpush", "app:list", "x", "y"},
		{"sadd", "app:set", "b", "a", "10"},
		{"xadd", "app:stream", "1-1", "f", "v"},
		{"xadd", "app:stream", "2-0", "g", "w", "h", "x"},
		{"xgroup", "create", "app:stream", "grp", "0"},
		{"xgroup", "create", "app:stream", "fresh", "$", "entriesread", "-1"},
		{"xreadgroup", "group", "grp", "alice", "count", "1", "streams", "app:stream", ">"},
		{"xgroup", "createconsumer", "app:stream", "grp", "bob"},
	} {
		if err := client.Do(ctx, c...).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Do(c...); err != nil {
			t.Fatal(err)
		}
	}

	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := RedisKeyspace(ctx, client, "app:*")
	if err != nil {
		t.Fatal(err)
	}
	want := Keyspace{
		"app:str":  {Type: "string", String: "hello", TTL: 100 * time.Second},
		"app:bin":  {Type: "string", String: "\x00\xff", TTL: NoTTL},
		"app:hash": {Type: "hash", Hash: map[string]string{"a": "1", "b": "2"}, TTL: 5 * time.Second},
		"app:zset": {Type: "zset", ZSet: []Member{{"neg", -1.5}, {"a", 1}, {"c", 1}, {"b", 2}, {"top", inf}}, TTL: NoTTL},
		"app:list": {Type: "list", List: []string{"x", "y"}, TTL: NoTTL},
		"app:set":  {Type: "set", Set: []string{"10", "a", "b"}, TTL: NoTTL},
		"app:stream": {Type: "stream", TTL: NoTTL, Stream: &Stream{
			Entries:      []StreamEntry{{ID: "1-1", Fields: []string{"f", "v"}}, {ID: "2-0", Fields: []string{"g", "w", "h", "x"}}},
			LastID:       "2-0",
			EntriesAdded: 2, MaxDeletedID: "0-0", RecordedFirstID: "1-1",
			Groups: []StreamGroup{
				{Name: "fresh", LastDeliveredID: "2-0", EntriesRead: -1},
				{Name: "grp", LastDeliveredID: "1-1", EntriesRead: 1, Pending: []StreamPending{{ID: "1-1", Consumer: "alice", Deliveries: 1}}, Consumers: []string{"alice", "bob"}},
			},
		}},
	}
	if d := DiffKeyspaces(got, want, 2*time.Second); d != "" {
		t.Fatalf("RedisKeyspace differs from what was written (-want +got):\n%s", d)
	}
	if got["app:str"].TTL%time.Millisecond != 0 || got["app:str"].TTL <= 90*time.Second {
		t.Fatalf("TTL %v: want millisecond precision and about 100s", got["app:str"].TTL)
	}

	// Only read commands were used.
	stats, err := client.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"scan": true, "type": true, "get": true, "hgetall": true, "zrange": true, "pttl": true, "config|resetstat": true, "info": true,
		"lrange": true, "smembers": true, "xrange": true, "xinfo|stream": true, "xinfo|groups": true, "xpending": true, "xinfo|consumers": true}
	seen := map[string]bool{}
	for _, line := range splitLines(stats) {
		name, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, ":")
		seen[name] = true
		if !allowed[name] {
			t.Errorf("RedisKeyspace sent %s", name)
		}
	}
	for _, name := range []string{"scan", "type", "get", "hgetall", "zrange", "pttl", "lrange", "smembers", "xrange", "xinfo|stream", "xinfo|groups", "xpending", "xinfo|consumers"} {
		if !seen[name] {
			t.Errorf("commandstats do not show %s: %q", name, stats)
		}
	}

	// The harness, given the same commands, has the same keyspace.
	all, err := RedisKeyspace(ctx, client, "*")
	if err != nil {
		t.Fatal(err)
	}
	if d := DiffKeyspaces(srv.Keyspace(), all, 2*time.Second); d != "" {
		t.Fatalf("harness differs from redis (-redis +harness):\n%s", d)
	}
	if _, ok := all["other"]; !ok {
		t.Fatal(`"*" did not match "other"`)
	}
}

var inf = func() float64 { var z float64; return 1 / z }()

func TestRedisKeyspaceManyKeys(t *testing.T) {
	client := startRedis(t)
	ctx := context.Background()
	flush(t, client)
	const n = 2500
	pipe := client.Pipeline()
	for i := range n {
		pipe.Set(ctx, fmt.Sprintf("k:%d", i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	ks, err := RedisKeyspace(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != n {
		t.Fatalf("read %d keys, want %d", len(ks), n)
	}
	if e := ks["k:1234"]; e.Type != "string" || e.String != "1234" || e.TTL != NoTTL {
		t.Fatalf("k:1234 = %+v", e)
	}
}

func TestDiffKeyspaces(t *testing.T) {
	a := Keyspace{
		"s": {Type: "string", String: "v", TTL: 10 * time.Second},
		"h": {Type: "hash", Hash: map[string]string{}, TTL: NoTTL},
		"z": {Type: "zset", ZSet: []Member{{"m", 1}}, TTL: NoTTL},
	}
	b := Keyspace{
		"s": {Type: "string", String: "v", TTL: 9*time.Second + 500*time.Millisecond},
		"h": {Type: "hash", TTL: NoTTL},
		"z": {Type: "zset", ZSet: []Member{{"m", 1}}, TTL: NoTTL},
	}
	if d := DiffKeyspaces(a, b, time.Second); d != "" {
		t.Fatalf("within tolerance, got diff:\n%s", d)
	}
	if d := DiffKeyspaces(a, b, 100*time.Millisecond); d == "" {
		t.Fatal("TTLs 500ms apart matched with a 100ms tolerance")
	}
	b["z"] = Entry{Type: "zset", ZSet: []Member{{"m", 2}}, TTL: NoTTL}
	if d := DiffKeyspaces(a, b, time.Second); !strings.Contains(d, "Score") {
		t.Fatalf("a different score: %q", d)
	}
	b["z"] = Entry{Type: "zset", ZSet: []Member{{"m", 1}}, TTL: time.Second}
	if d := DiffKeyspaces(a, b, time.Hour); d == "" {
		t.Fatal("NoTTL matched a TTL")
	}
}
