package luatest

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

type step struct {
	args    []any
	want    any
	wantErr string // exact error text when set
}

func s(args ...any) []any { return args }

func arr(v ...any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

func runSteps(t *testing.T, srv *Server, steps []step) {
	t.Helper()
	for _, st := range steps {
		got, err := srv.Do(st.args...)
		if st.wantErr != "" {
			if err == nil || err.Error() != st.wantErr {
				t.Errorf("%v: (%#v, %v), want error %q", st.args, got, err, st.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: error %v, want %#v", st.args, err, st.want)
			continue
		}
		if !reflect.DeepEqual(got, st.want) {
			t.Errorf("%v = %#v, want %#v", st.args, got, st.want)
		}
	}
}

// TestCommands checks each command family against what Redis 7.0 replies
// (TestConformanceWithRedis and TestDoConformance check the same against a real
// server).
func TestCommands(t *testing.T) {
	families := map[string][]step{
		"strings": {
			{args: s("get", "k"), want: nil},
			{args: s("set", "k", "v"), want: "OK"},
			{args: s("get", "k"), want: "v"},
			{args: s("set", "k", "w", "NX"), want: nil},
			{args: s("set", "k", "w", "XX"), want: "OK"},
			{args: s("set", "k2", "w", "XX"), want: nil},
			{args: s("set", "k", "x", "GET"), want: "w"},
			{args: s("set", "k3", "x", "GET"), want: nil},
			{args: s("set", "k", "v", "NX", "XX"), wantErr: "ERR syntax error"},
			{args: s("set", "k", "v", "EX", "0"), wantErr: "ERR invalid expire time in 'set' command"},
			{args: s("set", "k", "v", "EX", "x"), wantErr: "ERR value is not an integer or out of range"},
			{args: s("set", "k", "v", "EX", 10, "PX", 100), wantErr: "ERR syntax error"},
			{args: s("set", "k", "v", "KEEPTTL", "EX", 10), wantErr: "ERR syntax error"},
			{args: s("set", "k"), wantErr: "ERR wrong number of arguments for 'set' command"},
			{args: s("del", "k", "k3", "missing"), want: int64(2)},
			{args: s("exists", "k", "k3"), want: int64(0)},
			{args: s("set", "k", "1"), want: "OK"},
			{args: s("exists", "k", "k", "missing"), want: int64(2)},
			{args: s("type", "k"), want: "string"},
			{args: s("type", "missing"), want: "none"},
		},
		"counters": {
			{args: s("incr", "n"), want: int64(1)},
			{args: s("incrby", "n", 10), want: int64(11)},
			{args: s("decr", "n"), want: int64(10)},
			{args: s("decrby", "n", -5), want: int64(15)},
			{args: s("get", "n"), want: "15"},
			{args: s("incrby", "n", "1.5"), wantErr: "ERR value is not an integer or out of range"},
			{args: s("set", "s", "abc"), want: "OK"},
			{args: s("incr", "s"), wantErr: "ERR value is not an integer or out of range"},
			{args: s("set", "s", " 1"), want: "OK"},
			{args: s("incr", "s"), wantErr: "ERR value is not an integer or out of range"},
			{args: s("set", "max", "9223372036854775807"), want: "OK"},
			{args: s("incr", "max"), wantErr: "ERR increment or decrement would overflow"},
			{args: s("decrby", "n", "-9223372036854775808"), wantErr: "ERR decrement would overflow"},
			{args: s("incr", "n", "x"), wantErr: "ERR wrong number of arguments for 'incr' command"},
		},
		"expiry": {
			{args: s("set", "k", "v"), want: "OK"},
			{args: s("ttl", "k"), want: int64(-1)},
			{args: s("pttl", "missing"), want: int64(-2)},
			{args: s("expire", "k", 100), want: int64(1)},
			{args: s("ttl", "k"), want: int64(100)},
			{args: s("pexpire", "k", 1500), want: int64(1)},
			{args: s("pttl", "k"), want: int64(1500)},
			{args: s("ttl", "k"), want: int64(2)}, // rounded, as Redis does
			{args: s("expire", "k", 10, "NX"), want: int64(0)},
			{args: s("expire", "k", 10, "GT"), want: int64(1)},
			{args: s("expire", "k", 5, "GT"), want: int64(0)},
			{args: s("expire", "k", 5, "LT"), want: int64(1)},
			{args: s("expire", "k", 5, "NX", "XX"), wantErr: "ERR NX and XX, GT or LT options at the same time are not compatible"},
			{args: s("expire", "k", 5, "GT", "LT"), wantErr: "ERR GT and LT options at the same time are not compatible"},
			{args: s("expire", "k", 5, "SOON"), wantErr: "ERR Unsupported option SOON"},
			{args: s("expire", "k", "99999999999999999"), wantErr: "ERR invalid expire time in 'expire' command"},
			{args: s("expire", "missing", 10), want: int64(0)},
			{args: s("persist", "k"), want: int64(1)},
			{args: s("persist", "k"), want: int64(0)},
			{args: s("ttl", "k"), want: int64(-1)},
			{args: s("pexpireat", "k", epoch.Add(time.Minute).UnixMilli()), want: int64(1)},
			{args: s("pttl", "k"), want: int64(60000)},
			{args: s("expireat", "k", epoch.Add(time.Hour).Unix()), want: int64(1)},
			{args: s("ttl", "k"), want: int64(3600)},
			{args: s("expire", "k", 0), want: int64(1)},
			{args: s("exists", "k"), want: int64(0)},
			{args: s("set", "k", "v"), want: "OK"},
			{args: s("expire", "k", -5), want: int64(1)},
			{args: s("exists", "k"), want: int64(0)},
			{args: s("set", "k", "v", "EX", 60), want: "OK"},
			{args: s("incr", "c"), want: int64(1)},
			{args: s("set", "k", "w", "KEEPTTL"), want: "OK"},
			{args: s("ttl", "k"), want: int64(60)},
			{args: s("set", "k", "x"), want: "OK"},
			{args: s("ttl", "k"), want: int64(-1)},
		},
		"hashes": {
			{args: s("hset", "h", "a", "1", "b", "2"), want: int64(2)},
			{args: s("hset", "h", "a", "10", "c", "3"), want: int64(1)},
			{args: s("hget", "h", "a"), want: "10"},
			{args: s("hget", "h", "z"), want: nil},
			{args: s("hmget", "h", "a", "z", "c"), want: arr("10", nil, "3")},
			{args: s("hgetall", "h"), want: arr("a", "10", "b", "2", "c", "3")},
			{args: s("hgetall", "missing"), want: arr()},
			{args: s("hexists", "h", "b"), want: int64(1)},
			{args: s("hexists", "h", "z"), want: int64(0)},
			{args: s("hlen", "h"), want: int64(3)},
			{args: s("hincrby", "h", "a", 5), want: int64(15)},
			{args: s("hincrby", "h", "new", -2), want: int64(-2)},
			{args: s("hset", "h", "s", "x"), want: int64(1)},
			{args: s("hincrby", "h", "s", 1), wantErr: "ERR hash value is not an integer"},
			{args: s("hincrby", "h", "a", "x"), wantErr: "ERR value is not an integer or out of range"},
			{args: s("hset", "h", "a"), wantErr: "ERR wrong number of arguments for 'hset' command"},
			{args: s("hset", "h", "a", "1", "b"), wantErr: "ERR wrong number of arguments for 'hset' command"},
			{args: s("hdel", "h", "a", "z"), want: int64(1)},
			{args: s("hdel", "h", "b", "c", "new", "s"), want: int64(4)},
			{args: s("exists", "h"), want: int64(0)},
			{args: s("type", "h"), want: "none"},
		},
		"sorted sets": {
			{args: s("zadd", "z", 1, "a", 2, "b", 3, "c"), want: int64(3)},
			{args: s("zadd", "z", "NX", 10, "a", 4, "d"), want: int64(1)},
			{args: s("zadd", "z", "XX", 10, "a", 5, "e"), want: int64(0)},
			{args: s("zadd", "z", "CH", 10, "a", 6, "f"), want: int64(1)},
			{args: s("zadd", "z", "GT", "CH", 1, "a"), want: int64(0)},
			{args: s("zadd", "z", "LT", "CH", 1, "a"), want: int64(1)},
			{args: s("zadd", "z", "INCR", 0.5, "a"), want: "1.5"},
			{args: s("zadd", "z", "NX", "INCR", 1, "a"), want: nil},
			{args: s("zadd", "z", "NX", "XX", 1, "a"), wantErr: "ERR XX and NX options at the same time are not compatible"},
			{args: s("zadd", "z", "GT", "LT", 1, "a"), wantErr: "ERR GT, LT, and/or NX options at the same time are not compatible"},
			{args: s("zadd", "z", "x", "a"), wantErr: "ERR value is not a valid float"},
			{args: s("zadd", "z", 1, "a", 2), wantErr: "ERR syntax error"},
			{args: s("zcard", "z"), want: int64(5)},
			{args: s("zscore", "z", "a"), want: "1.5"},
			{args: s("zscore", "z", "nope"), want: nil},
			{args: s("zrange", "z", 0, -1), want: arr("a", "b", "c", "d", "f")},
			{args: s("zrange", "z", 0, 1, "WITHSCORES"), want: arr("a", "1.5", "b", "2")},
			{args: s("zrange", "z", 0, 1, "REV"), want: arr("f", "d")},
			{args: s("zrange", "z", "(2", "4", "BYSCORE"), want: arr("c", "d")},
			{args: s("zrange", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", 1, 2), want: arr("d", "c")},
			{args: s("zrange", "z", 0, -1, "LIMIT", 0, 1), wantErr: "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"},
			{args: s("zrangebyscore", "z", "-inf", "(3", "WITHSCORES"), want: arr("a", "1.5", "b", "2")},
			{args: s("zrangebyscore", "z", 2, "+inf", "LIMIT", 1, 2), want: arr("c", "d")},
			{args: s("zrangebyscore", "z", "x", 1), wantErr: "ERR min or max is not a float"},
			{args: s("zcount", "z", "(1.5", 4), want: int64(3)},
			{args: s("zcount", "z", "-inf", "+inf"), want: int64(5)},
			{args: s("zrem", "z", "a", "nope"), want: int64(1)},
			{args: s("zremrangebyscore", "z", "-inf", "(3"), want: int64(1)},
			{args: s("zremrangebyrank", "z", -1, -1), want: int64(1)},
			{args: s("zrange", "z", 0, -1, "WITHSCORES"), want: arr("c", "3", "d", "4")},
			{args: s("zremrangebyrank", "z", 0, -1), want: int64(2)},
			{args: s("exists", "z"), want: int64(0)},
			{args: s("zadd", "z", "0.1", "x", "1e20", "y", "-inf", "n"), want: int64(3)},
			{args: s("zrange", "z", 0, -1, "WITHSCORES"), want: arr("n", "-inf", "x", "0.10000000000000001", "y", "1e+20")},
		},
		"wrong types": {
			{args: s("set", "str", "v"), want: "OK"},
			{args: s("hset", "hash", "f", "v"), want: int64(1)},
			{args: s("zadd", "zset", 1, "m"), want: int64(1)},
			{args: s("get", "hash"), wantErr: wrongType},
			{args: s("incr", "hash"), wantErr: wrongType},
			{args: s("set", "hash", "v", "GET"), wantErr: wrongType},
			{args: s("hget", "str", "f"), wantErr: wrongType},
			{args: s("hset", "zset", "f", "v"), wantErr: wrongType},
			{args: s("hgetall", "str"), wantErr: wrongType},
			{args: s("hincrby", "str", "f", 1), wantErr: wrongType},
			{args: s("zadd", "hash", 1, "m"), wantErr: wrongType},
			{args: s("zrange", "str", 0, -1), wantErr: wrongType},
			{args: s("zscore", "hash", "m"), wantErr: wrongType},
			{args: s("zcard", "str"), wantErr: wrongType},
			{args: s("set", "hash", "now a string"), want: "OK"},
			{args: s("type", "hash"), want: "string"},
		},
		"other": {
			{args: s("publish", "ch", "msg"), want: int64(0)},
			{args: s("ping"), want: "PONG"},
			{args: s("ping", "hi"), want: "hi"},
			{args: s("nosuch", "a", "b"), wantErr: "ERR unknown command 'nosuch', with args beginning with: 'a' 'b' "},
			{args: s("dump", "a"), wantErr: "ERR luatest does not implement DUMP (Server.RegisterCommand can add it)"},
			{args: s("xgroup", "nosuch", "a"), wantErr: "ERR unknown subcommand 'nosuch'. Try XGROUP HELP."},
			{args: s("object", "encoding"), wantErr: "ERR wrong number of arguments for 'object|encoding' command"},
			{args: s("time", "x"), wantErr: "ERR wrong number of arguments for 'time' command"},
			{args: s("GET", "x"), want: nil},
		},
	}
	for name, steps := range families {
		t.Run(name, func(t *testing.T) {
			runSteps(t, NewServer(NewClock(epoch)), steps)
		})
	}
}

func TestTTLFollowsTheClock(t *testing.T) {
	clock := NewClock(epoch)
	srv := NewServer(clock)
	if srv.Clock() != clock {
		t.Fatal("Clock() is not the server's clock")
	}
	runSteps(t, srv, []step{
		{args: s("set", "k", "v", "PX", 100), want: "OK"},
		{args: s("hset", "h", "f", "v"), want: int64(1)},
		{args: s("expire", "h", 10), want: int64(1)},
		{args: s("set", "forever", "v"), want: "OK"},
	})
	clock.Advance(99 * time.Millisecond)
	runSteps(t, srv, []step{{args: s("pttl", "k"), want: int64(1)}})
	clock.Advance(time.Millisecond)
	// Redis keeps a key through its deadline millisecond.
	runSteps(t, srv, []step{{args: s("pttl", "k"), want: int64(0)}, {args: s("get", "k"), want: "v"}})
	clock.Advance(time.Millisecond)
	runSteps(t, srv, []step{{args: s("get", "k"), want: nil}, {args: s("pttl", "k"), want: int64(-2)}, {args: s("exists", "k"), want: int64(0)}})

	ks := srv.Keyspace()
	want := Keyspace{
		"h":       {Type: "hash", Hash: map[string]string{"f": "v"}, TTL: 10*time.Second - 101*time.Millisecond},
		"forever": {Type: "string", String: "v", TTL: NoTTL},
	}
	if !reflect.DeepEqual(ks, want) {
		t.Fatalf("Keyspace = %+v, want %+v", ks, want)
	}
	clock.Advance(time.Hour)
	if ks := srv.Keyspace(); len(ks) != 1 || ks["forever"].Type != "string" {
		t.Fatalf("after an hour: %+v", ks)
	}
	clock.Set(epoch)
	if got, _ := srv.Do("ttl", "forever"); got != int64(-1) {
		t.Fatalf("ttl = %v", got)
	}

	// Inside a script.
	sc := mustLoad(t, "redis.call('set', KEYS[1], ARGV[1], 'EX', 30) return redis.call('ttl', KEYS[1])")
	res := srv.Run(sc, []string{"s"}, "x")
	if res.Reply != int64(30) || res.TTLs["s"] != 30*time.Second || res.Check() != nil {
		t.Fatalf("script: %#v %v %v %v", res.Reply, res.Err, res.TTLs, res.Check())
	}
	clock.Advance(30*time.Second + time.Millisecond)
	if res := srv.Run(mustLoad(t, "return redis.call('exists', KEYS[1])"), []string{"s"}); res.Reply != int64(0) {
		t.Fatalf("key alive after its TTL: %#v", res.Reply)
	}
}

func TestTimeFollowsTheClock(t *testing.T) {
	clock := NewClock(time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC))
	srv := NewServer(clock)
	want := func() []any {
		now := clock.Now()
		return []any{strconv.FormatInt(now.Unix(), 10), strconv.Itoa(now.Nanosecond() / 1000)}
	}
	got, err := srv.Do("time")
	if err != nil || !reflect.DeepEqual(got, want()) || got.([]any)[1] != "123456" {
		t.Fatalf("TIME = %#v (%v), want %#v", got, err, want())
	}
	clock.Advance(90 * time.Second)
	sc := mustLoad(t, "local t = redis.call('TIME') return {t[1], t[2], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}")
	res := srv.Run(sc, nil)
	now := clock.Now()
	wantReply := append(want(), now.UnixMilli())
	if res.Err != nil || !reflect.DeepEqual(res.Reply, wantReply) {
		t.Fatalf("script TIME = %#v (%v), want %#v", res.Reply, res.Err, wantReply)
	}
}

func TestClock(t *testing.T) {
	c := NewClock(epoch)
	if !c.Now().Equal(epoch) {
		t.Fatal(c.Now())
	}
	c.Advance(time.Second)
	c.Advance(-time.Millisecond)
	if got := c.Now().Sub(epoch); got != 999*time.Millisecond {
		t.Fatalf("advanced by %v", got)
	}
	c.Set(epoch.Add(time.Hour))
	if !c.Now().Equal(epoch.Add(time.Hour)) {
		t.Fatal(c.Now())
	}
	if NewServer(nil).Clock() == nil {
		t.Fatal("NewServer(nil) has no clock")
	}
}

// TestScripts runs the scripts in testdata the way the project will.
func TestScripts(t *testing.T) {
	clock := NewClock(epoch)
	srv := NewServer(clock)
	limit, err := srv.LoadFile("testdata/rate_limit_sliding.lua")
	if err != nil {
		t.Fatal(err)
	}
	window := 10 * time.Second
	call := func(id string) []any {
		t.Helper()
		res := srv.Run(limit, []string{"rl:user:1"}, clock.Now().UnixMilli(), window.Milliseconds(), 3, id)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if err := res.Check(); err != nil {
			t.Fatal(err)
		}
		reply := res.Reply.([]any)
		if got, set := res.TTLs["rl:user:1"]; (reply[0] == int64(1)) != set || (set && got != window) {
			t.Fatalf("reply %v with TTLs %v, want a TTL of %v when allowed", reply, res.TTLs, window)
		}
		return reply
	}
	for i, want := range [][]any{{int64(1), int64(1), int64(0)}, {int64(1), int64(2), int64(0)}, {int64(1), int64(3), int64(0)}} {
		if got := call("r" + strconv.Itoa(i)); !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d: %v, want %v", i, got, want)
		}
		clock.Advance(time.Second)
	}
	if got := call("r3"); !reflect.DeepEqual(got, []any{int64(0), int64(3), int64(7000)}) {
		t.Fatalf("over the limit: %v", got)
	}
	clock.Advance(7 * time.Second)
	if got := call("r4"); !reflect.DeepEqual(got, []any{int64(1), int64(3), int64(0)}) {
		t.Fatalf("after the oldest left the window: %v", got)
	}

	acquire, err := srv.LoadFile("testdata/lock_acquire.lua")
	if err != nil {
		t.Fatal(err)
	}
	release, err := srv.LoadFile("testdata/lock_release.lua")
	if err != nil {
		t.Fatal(err)
	}
	if res := srv.Run(acquire, []string{"lock"}, "alice", 5000); res.Reply != int64(1) || res.Check() != nil {
		t.Fatalf("acquire: %#v %v %v", res.Reply, res.Err, res.Check())
	}
	if res := srv.Run(acquire, []string{"lock"}, "bob", 5000); res.Reply != int64(0) {
		t.Fatalf("second acquire: %#v %v", res.Reply, res.Err)
	}
	res := srv.Run(release, []string{"lock"}, "bob")
	if errorText(res.Err) != "NOT_OWNER lock held by another owner" {
		t.Fatalf("release by another owner: %v", res.Err)
	}
	if res.Err.(*ErrorReply).Code() != "NOT_OWNER" {
		t.Fatal(res.Err)
	}
	if res := srv.Run(release, []string{"lock"}, "alice"); res.Reply != int64(1) || len(res.Violations) != 0 {
		t.Fatalf("release: %#v %v %v", res.Reply, res.Err, res.Violations)
	}
	clock.Advance(time.Minute)
	if res := srv.Run(release, []string{"lock"}, "alice"); res.Reply != int64(0) {
		t.Fatalf("release of a free lock: %#v %v", res.Reply, res.Err)
	}
}

// TestDoConformance sends the same commands to the harness (Do) and to a real
// redis-server and compares the replies and the keyspace.
func TestDoConformance(t *testing.T) {
	client := startRedis(t)
	ctx := context.Background()
	flush(t, client)
	srv := NewServer(NewClock(time.Now()))
	cmds := [][]any{
		{"set", "s", "v"}, {"set", "s2", "v", "ex", 100}, {"set", "s3", "v", "px", 2500}, {"get", "s"}, {"get"}, {"get", "a", "b"},
		{"set", "n", "10"}, {"incr", "n"}, {"incrby", "n", -20}, {"decr", "n"}, {"decrby", "n", 5},
		{"hset", "h", "a", "1", "b", "2"}, {"hset", "h", "a", "1", "b"}, {"hgetall", "h"}, {"hmget", "h", "a", "x"}, {"hincrby", "h", "a", 41}, {"hdel", "h", "b"},
		{"zadd", "z", 1, "a", 2.5, "b", "-inf", "c"}, {"zadd", "z", "incr", 1, "a"}, {"zrange", "z", 0, -1, "withscores"}, {"zrangebyscore", "z", "(1", "+inf"},
		{"zadd", "z2", 1, "x"}, {"zrem", "z2", "x"}, {"exists", "z2"},
		{"expire", "h", 300}, {"pexpire", "z", 400000}, {"ttl", "h"}, {"persist", "s2"}, {"ttl", "s2"}, {"expire", "s2", 50, "lt"},
		{"type", "s"}, {"type", "h"}, {"type", "z"}, {"type", "none"},
		{"nosuch", "arg1", "arg2"}, {"NoSuch"}, {"zadd", "z"}, {"hset", "s", "f", "v"}, {"publish", "c", "m"}, {"ping"}, {"ping", "x"}, {"ping", "x", "y"},
		{"set", "k", strings.Repeat("x", 200)}, {"set", "bin", "\x00\xff\r\n"}, {"get", "bin"},
		{"expire", "gone", 10}, {"set", "gone", "v"}, {"pexpire", "gone", 0}, {"exists", "gone"},
	}
	for _, c := range cmds {
		want := normalize(client.Do(ctx, c...).Result())
		got := normalize(srv.Do(c...))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: harness %#v, redis %#v", c, got, want)
		}
	}
	compareKeyspaces(t, ctx, srv, client)
}

// TestScriptsConformance runs the testdata scripts on both with the same inputs.
func TestScriptsConformance(t *testing.T) {
	client := startRedis(t)
	ctx := context.Background()
	flush(t, client)
	srv := NewServer(NewClock(time.Now()))
	limit, err := srv.LoadFile("testdata/rate_limit_sliding.lua")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := readFile("testdata/rate_limit_sliding.lua")
	now := int64(1700000000123)
	for i := range 6 {
		args := []any{now + int64(i)*1500, 5000, 3, "req" + strconv.Itoa(i)}
		want := normalize(client.Eval(ctx, src, []string{"rl"}, args...).Result())
		res := srv.Run(limit, []string{"rl"}, args...)
		if got := normalize(res.Reply, res.Err); !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d: harness %#v, redis %#v", i, got, want)
		}
	}
	compareKeyspaces(t, ctx, srv, client)
}
