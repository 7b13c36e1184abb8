package luatest

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/luascript"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mustLoad(t *testing.T, src string) *Script {
	t.Helper()
	sc, err := Load("test.lua", []byte(src))
	if err != nil {
		t.Fatalf("Load(%q): %v", src, err)
	}
	return sc
}

func runScript(t *testing.T, srv *Server, src string, keys []string, args ...any) *Result {
	t.Helper()
	return srv.Run(mustLoad(t, src), keys, args...)
}

func errorText(err error) string {
	var er *ErrorReply
	if errors.As(err, &er) {
		return er.Msg
	}
	if err != nil {
		return "not an ErrorReply: " + err.Error()
	}
	return ""
}

func TestReplyConversion(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    any
		wantErr string
	}{
		{"integer", "return 42", int64(42), ""},
		{"float truncates", "return 3.7", int64(3), ""},
		{"negative float truncates toward zero", "return -3.7", int64(-3), ""},
		{"large integer", "return 1700000000123", int64(1700000000123), ""},
		{"infinity", "return 1/0", int64(math.MinInt64), ""},
		{"string", "return 'hello'", "hello", ""},
		{"binary string", "return 'a\\0b\\255'", "a\x00b\xff", ""},
		{"true is 1", "return true", int64(1), ""},
		{"false is nil", "return false", nil, ""},
		{"nil", "return nil", nil, ""},
		{"no return", "local x = 1", nil, ""},
		{"function is nil", "return print ~= nil and 1 or function() end", nil, "Script attempted to access nonexistent global variable 'print'"},
		{"only the first value", "return 1, 2, 3", int64(1), ""},
		{"array", "return {1, 'two', 3}", []any{int64(1), "two", int64(3)}, ""},
		{"array stops at the first nil", "return {1, 2, nil, 3}", []any{int64(1), int64(2)}, ""},
		{"false inside an array is nil", "return {1, false, 3}", []any{int64(1), nil, int64(3)}, ""},
		{"true inside an array is 1", "return {true}", []any{int64(1)}, ""},
		{"empty table", "return {}", []any{}, ""},
		{"hash part is ignored", "return {1, x = 2}", []any{int64(1)}, ""},
		{"nested", "return {{1, {2}}, 'x', {}}", []any{[]any{int64(1), []any{int64(2)}}, "x", []any{}}, ""},
		{"status", "return {ok = 'FINE'}", "FINE", ""},
		{"status_reply", "return redis.status_reply('QUEUED')", "QUEUED", ""},
		{"status in an array", "return {{ok = 'A'}, 1}", []any{"A", int64(1)}, ""},
		{"error table", "return {err = 'MY_CODE something failed'}", nil, "MY_CODE something failed"},
		{"error_reply", "return redis.error_reply('NOT_OWNER lock held by another owner')", nil, "NOT_OWNER lock held by another owner"},
		{"error_reply without a code gets ERR", "return redis.error_reply('oops')", nil, "ERR oops"},
		{"error inside an array", "return {1, {err = 'BAD x'}}", []any{int64(1), &ErrorReply{Msg: "BAD x"}}, ""},
		{"err must be a string", "return {err = 5}", []any{}, ""},
		{"double is a bulk string in RESP2", "return {double = 1.5}", "1.5", ""},
	}
	srv := NewServer(NewClock(epoch))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runScript(t, srv, tc.src, nil)
			if tc.wantErr != "" {
				if !strings.Contains(errorText(res.Err), tc.wantErr) {
					t.Fatalf("Err = %v, want an ErrorReply containing %q", res.Err, tc.wantErr)
				}
				if res.Reply != nil {
					t.Fatalf("Reply = %#v with an error", res.Reply)
				}
				return
			}
			if res.Err != nil {
				t.Fatalf("Err = %v", res.Err)
			}
			if !reflect.DeepEqual(res.Reply, tc.want) {
				t.Fatalf("Reply = %#v, want %#v", res.Reply, tc.want)
			}
		})
	}
}

func TestRuntimeErrorReply(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	sc := mustLoad(t, "local a = 1\nerror('boom')")
	res := srv.Run(sc, nil)
	want := "ERR user_script:2: boom script: " + sc.SHA1() + ", on @user_script:2."
	if got := errorText(res.Err); got != want {
		t.Fatalf("Err = %q, want %q", got, want)
	}
	var er *ErrorReply
	if !errors.As(res.Err, &er) || er.Code() != "ERR" {
		t.Fatalf("Code of %v is not ERR", res.Err)
	}

	res = runScript(t, srv, "local t = nil\nreturn t + 1", nil)
	if got := errorText(res.Err); !strings.HasPrefix(got, "ERR user_script:2: attempt to perform arithmetic on a nil value script: ") {
		t.Fatalf("Err = %q", got)
	}

	// An error a command raises through redis.call keeps its code.
	res = runScript(t, srv, "redis.call('set', KEYS[1], 'x')\nreturn redis.call('incr', KEYS[1])", []string{"k"})
	if got := errorText(res.Err); !strings.HasPrefix(got, "ERR value is not an integer or out of range script: ") || !strings.HasSuffix(got, "on @user_script:2.") {
		t.Fatalf("Err = %q", got)
	}
	res = runScript(t, srv, "redis.call('hset', KEYS[1], 'f', 'v')\nreturn redis.call('get', KEYS[1])", []string{"h"})
	if er, ok := res.Err.(*ErrorReply); !ok || er.Code() != "WRONGTYPE" {
		t.Fatalf("Err = %v, want WRONGTYPE", res.Err)
	}
}

func TestRedisToLuaConversion(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want any
	}{
		{"integer reply is a number", "local r = redis.call('incr', KEYS[1]) return {type(r), r + 1}", []any{"number", int64(2)}},
		{"bulk reply is a string", "redis.call('set', KEYS[1], 'v') local r = redis.call('get', KEYS[1]) return {type(r), r}", []any{"string", "v"}},
		{"nil reply is false", "local r = redis.call('get', KEYS[1]) return {type(r), tostring(r)}", []any{"boolean", "false"}},
		{"status reply is a table with ok", "local r = redis.call('set', KEYS[1], 'v') return {type(r), r.ok}", []any{"table", "OK"}},
		{"array reply is a table", "redis.call('hset', KEYS[1], 'a', '1') local r = redis.call('hgetall', KEYS[1]) return {type(r), #r, r[1], r[2]}", []any{"table", int64(2), "a", "1"}},
		{"nil elements are false", "redis.call('hset', KEYS[1], 'a', '1') local r = redis.call('hmget', KEYS[1], 'x', 'a') return {#r, type(r[1]), tostring(r[1]), r[2]}", []any{int64(2), "boolean", "false", "1"}},
		{"empty array is an empty table", "local r = redis.call('hgetall', KEYS[1]) return {type(r), #r}", []any{"table", int64(0)}},
		{"pcall error is a table with err", "redis.call('set', KEYS[1], 'x') local r = redis.pcall('incr', KEYS[1]) return {type(r), r.err}", []any{"table", "ERR value is not an integer or out of range"}},
		{"call error is raised; pcall() sees the err string", "redis.call('set', KEYS[1], 'x') local ok, e = pcall(redis.call, 'incr', KEYS[1]) return {tostring(ok), type(e), e}", []any{"false", "string", "ERR value is not an integer or out of range"}},
		{"scores are strings", "redis.call('zadd', KEYS[1], 1.5, 'm') local r = redis.call('zrange', KEYS[1], 0, -1, 'withscores') return {type(r[2]), r[2]}", []any{"string", "1.5"}},
		{"time is two strings", "local r = redis.call('time') return {type(r[1]), type(r[2]), #r}", []any{"string", "string", int64(2)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(NewClock(epoch))
			res := runScript(t, srv, tc.src, []string{"k"})
			if res.Err != nil {
				t.Fatalf("Err = %v", res.Err)
			}
			if !reflect.DeepEqual(res.Reply, tc.want) {
				t.Fatalf("Reply = %#v, want %#v", res.Reply, tc.want)
			}
		})
	}
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		msg       string
	}{
		{"goto", "local i = 0\nif i == 0 then\n  goto done\nend\n::done::\nreturn i", 3, "goto"},
		{"label", "local i = 0\n::top::\nreturn i", 2, "label"},
		{"bad shebang", "#!python\nreturn 1", 1, "shebang"},
		{"unknown flag", "#!lua flags=fast\nreturn 1", 1, "flag"},
		{"syntax error", "local a = 1\n\nlocal = 3\nreturn a", 3, ""},
		{"unfinished function", "local function f()\n  return 1\n", 3, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("app/bad.lua", []byte(tc.src))
			var se *luascript.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Load error = %v, want a *luascript.SyntaxError", err)
			}
			if !errors.Is(err, luascript.ErrSyntax) {
				t.Fatalf("error does not match luascript.ErrSyntax")
			}
			if se.File != "app/bad.lua" || se.Line != tc.line {
				t.Fatalf("error at %s:%d, want app/bad.lua:%d (%v)", se.File, se.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), "app/bad.lua:") || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error text %q", err)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	if _, err := srv.LoadFile("testdata/goto.lua"); err == nil || !strings.HasPrefix(err.Error(), "testdata/goto.lua:2: ") {
		t.Fatalf("goto.lua: %v, want testdata/goto.lua:2: ...", err)
	}
	if _, err := srv.LoadFile("testdata/syntax_error.lua"); err == nil || !strings.HasPrefix(err.Error(), "testdata/syntax_error.lua:3: ") {
		t.Fatalf("syntax_error.lua: %v, want testdata/syntax_error.lua:3: ...", err)
	}
	if _, err := srv.LoadFile("testdata/missing.lua"); err == nil {
		t.Fatal("loading a missing file succeeded")
	}
	sc, err := srv.LoadFile("testdata/rate_limit_sliding.lua")
	if err != nil {
		t.Fatal(err)
	}
	if sc.File() != "testdata/rate_limit_sliding.lua" || len(sc.SHA1()) != 40 || sc.ReadOnly() {
		t.Fatalf("script %s %s %v", sc.File(), sc.SHA1(), sc.ReadOnly())
	}
	src, err := readFile("testdata/rate_limit_sliding.lua")
	if err != nil || string(sc.Source()) != src {
		t.Fatalf("Source() differs from the file (%v)", err)
	}
	if got := sc.Info().Commands(); !reflect.DeepEqual(got, []string{"pexpire", "zadd", "zcard", "zrange", "zremrangebyscore"}) {
		t.Fatalf("Info().Commands() = %v", got)
	}
}

func TestShebangKeepsLineNumbers(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	res := runScript(t, srv, "#!lua flags=no-writes\nlocal a = 1\nerror('three')", nil)
	if got := errorText(res.Err); !strings.HasPrefix(got, "ERR user_script:3: three script: ") || !strings.HasSuffix(got, "on @user_script:3.") {
		t.Fatalf("Err = %q", got)
	}
	res = runScript(t, srv, "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'v')", []string{"k"})
	if got := errorText(res.Err); !strings.HasPrefix(got, "ERR Write commands are not allowed from read-only scripts. script: ") {
		t.Fatalf("Err = %q", got)
	}
	if ks := srv.Keyspace(); len(ks) != 0 {
		t.Fatalf("read-only script wrote %v", ks)
	}
}

func TestSandbox(t *testing.T) {
	tests := []struct {
		name, src string
		want      any
		wantErr   string
	}{
		{"create a global", "x = 1", nil, "ERR user_script:1: Attempt to modify a readonly table script: "},
		{"create a global in a function", "local function f()\n  counter = 1\nend\nf()", nil, "ERR user_script:2: Attempt to modify a readonly table script: "},
		{"overwrite a builtin", "tostring = nil", nil, "Attempt to modify a readonly table"},
		{"modify a library", "string.upper = nil", nil, "Attempt to modify a readonly table"},
		{"modify redis", "redis.call = function() end", nil, "Attempt to modify a readonly table"},
		{"rawset on _G", "rawset(_G, 'x', 1)", nil, "ERR Attempt to modify a readonly table script: "},
		{"setmetatable on _G", "setmetatable(_G, {})", nil, "Attempt to modify a readonly table"},
		{"read an undefined global", "return undefined_thing", nil, "ERR user_script:1: Script attempted to access nonexistent global variable 'undefined_thing' script: "},
		{"os", "return os.time()", nil, "nonexistent global variable 'os'"},
		{"io", "return io.open('/etc/passwd')", nil, "nonexistent global variable 'io'"},
		{"debug", "return debug.getinfo(1)", nil, "nonexistent global variable 'debug'"},
		{"package", "return package.path", nil, "nonexistent global variable 'package'"},
		{"require", "return require('os')", nil, "nonexistent global variable 'require'"},
		{"dofile", "return dofile('/etc/passwd')", nil, "nonexistent global variable 'dofile'"},
		{"loadfile", "return loadfile('/etc/passwd')", nil, "nonexistent global variable 'loadfile'"},
		{"print", "print('x')", nil, "nonexistent global variable 'print'"},
		{"coroutine", "return type(coroutine.create(function() end))", "thread", ""},
		{"channel", "return channel.make()", nil, "nonexistent global variable 'channel'"},
		{"getfenv", "return getfenv(1)", nil, "nonexistent global variable 'getfenv'"},
		{"local variables are fine", "local x = 1 x = x + 1 return x", int64(2), ""},
		{"KEYS and ARGV", "return {KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], #ARGV}", []any{"k", "7", "2.5", "1", "0", int64(5)}, ""},
		{"loadstring is there", "return loadstring('return 6 * 7')()", int64(42), ""},
		{"loadstring code is sandboxed too", "return loadstring('y = 1')()", nil, "Attempt to modify a readonly table"},
		{"libraries work", "return {string.upper('a'), table.concat({'a', 'b'}, ','), math.floor(2.5), ('x'):rep(3)}", []any{"A", "a,b", int64(2), "xxx"}, ""},
		{"pairs sees through read-only tables", "local n = 0 for k in pairs(math) do n = n + 1 end return n > 20", int64(1), ""},
		{"_VERSION", "return _VERSION", "Lua 5.1", ""},
		{"tostring uses %.14g", "return {tostring(1700000000000000), tostring(1/3), tostring(0.1), tostring(12)}", []any{"1.7e+15", "0.33333333333333", "0.1", "12"}, ""},
		{"tonumber like Lua 5.1", "return {tonumber('5e2'), tonumber(' 0x10 '), tonumber('z', 36)}", []any{int64(500), int64(16), int64(35)}, ""},
		{"math.huge is infinite", "return tostring(math.huge)", "inf", ""},
		{"version", "return redis.REDIS_VERSION", "7.0.15", ""},
		{"setresp 3 is refused", "redis.setresp(3)", nil, "RESP2 only"},
		{"setresp 2 is fine", "redis.setresp(2) return 1", int64(1), ""},
		{"set_repl and replicate_commands", "redis.set_repl(redis.REPL_ALL) return redis.replicate_commands()", int64(1), ""},
		{"sha1hex", "return redis.sha1hex('abc')", "a9993e364706816aba3e25717850c26c9cd0d89d", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(NewClock(epoch))
			res := runScript(t, srv, tc.src, []string{"k"}, 7, 2.5, true, false, []byte("bin"))
			if tc.wantErr != "" {
				if got := errorText(res.Err); !strings.Contains(got, tc.wantErr) {
					t.Fatalf("Err = %q, want it to contain %q", got, tc.wantErr)
				}
				return
			}
			if res.Err != nil {
				t.Fatalf("Err = %v", res.Err)
			}
			if !reflect.DeepEqual(res.Reply, tc.want) {
				t.Fatalf("Reply = %#v, want %#v", res.Reply, tc.want)
			}
		})
	}
}

func TestEachRunIsFresh(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	// A script cannot leave anything behind in Lua for the next run: even
	// when a table it can reach is modified, the next run starts from scratch.
	res := runScript(t, srv, "KEYS.extra = 'x' table.insert(ARGV, 'more') return #ARGV", nil, "a")
	if res.Err != nil || res.Reply != int64(2) {
		t.Fatalf("first run: %v %v", res.Reply, res.Err)
	}
	res = runScript(t, srv, "return {KEYS.extra or 'none', #ARGV}", nil, "a")
	if !reflect.DeepEqual(res.Reply, []any{"none", int64(1)}) {
		t.Fatalf("second run saw %#v", res.Reply)
	}
}

func TestViolations(t *testing.T) {
	tests := []struct {
		name  string
		setup [][]any
		src   string
		keys  []string
		want  []string
	}{
		{"well behaved", nil, "redis.call('set', KEYS[1], 'v', 'EX', 60) redis.call('incr', KEYS[2]) redis.call('expire', KEYS[2], 10) return redis.call('get', KEYS[1])", []string{"a", "b"}, nil},
		{"reads need no TTL", [][]any{{"set", "a", "v"}}, "return redis.call('get', KEYS[1])", []string{"a"}, nil},
		{"undeclared key", nil, "redis.call('get', KEYS[1]) return redis.call('get', 'other:key')", []string{"a"}, []string{`touched key "other:key" not passed in KEYS`}},
		{"undeclared key via pcall and a failed command", nil, "redis.pcall('hget', 'x', 'f') redis.pcall('incrby', 'y', 'notanumber') return 1", nil, []string{`touched key "x" not passed in KEYS`, `touched key "y" not passed in KEYS`}},
		{"reported once", nil, "redis.call('get', 'x') redis.call('get', 'x') return 1", nil, []string{`touched key "x" not passed in KEYS`}},
		{"written without a TTL", nil, "redis.call('set', KEYS[1], 'v') return 1", []string{"a"}, []string{`key "a" written without a TTL`}},
		{"hash without a TTL", nil, "redis.call('hset', KEYS[1], 'f', 'v') return 1", []string{"h"}, []string{`key "h" written without a TTL`}},
		{"SET drops the TTL", [][]any{{"set", "a", "v", "ex", "100"}}, "redis.call('set', KEYS[1], 'w') return 1", []string{"a"}, []string{`key "a" written without a TTL`}},
		{"SET KEEPTTL keeps it", [][]any{{"set", "a", "v", "ex", "100"}}, "redis.call('set', KEYS[1], 'w', 'KEEPTTL') return 1", []string{"a"}, nil},
		{"INCR keeps the TTL", [][]any{{"set", "a", "1", "ex", "100"}}, "redis.call('incr', KEYS[1]) return 1", []string{"a"}, nil},
		{"PERSIST removes it", [][]any{{"set", "a", "1", "ex", "100"}}, "redis.call('persist', KEYS[1]) return 1", []string{"a"}, []string{`key "a" written without a TTL`}},
		{"deleted keys need no TTL", [][]any{{"set", "a", "1"}}, "redis.call('del', KEYS[1]) return 1", []string{"a"}, nil},
		{"a write that changed nothing", [][]any{{"set", "a", "1"}}, "redis.call('set', KEYS[1], 'v', 'NX') return 1", []string{"a"}, nil},
		{"a failed write", [][]any{{"set", "a", "x"}}, "redis.pcall('incr', KEYS[1]) return 1", []string{"a"}, nil},
		{"SELECT", nil, "redis.pcall('select', 1) return 1", nil, []string{"SELECT called: a script must stay in the database its caller chose"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(NewClock(epoch))
			for _, c := range tc.setup {
				if _, err := srv.Do(c...); err != nil {
					t.Fatal(err)
				}
			}
			res := runScript(t, srv, tc.src, tc.keys)
			if res.Err != nil {
				t.Fatalf("Err = %v", res.Err)
			}
			if !reflect.DeepEqual(res.Violations, tc.want) {
				t.Fatalf("Violations = %q, want %q", res.Violations, tc.want)
			}
			err := res.Check()
			if (err == nil) != (len(tc.want) == 0) {
				t.Fatalf("Check() = %v with violations %q", err, res.Violations)
			}
			for _, v := range tc.want {
				if !strings.Contains(err.Error(), v) {
					t.Fatalf("Check() = %q does not list %q", err, v)
				}
			}
		})
	}
}

func TestSelectIsRefused(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	res := runScript(t, srv, "return redis.call('select', 0)", nil)
	if !strings.Contains(errorText(res.Err), "SELECT is refused") {
		t.Fatalf("Err = %v", res.Err)
	}
	if _, err := srv.Do("SELECT", 1); err == nil {
		t.Fatal("Do(SELECT) succeeded")
	}
}

func TestRecording(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	src := `
redis.call('SET', KEYS[1], 'v', 'PX', 1500)
redis.call('get', KEYS[2])
redis.call('hset', KEYS[2], 'f', 1)
redis.call('expire', KEYS[2], 30)
redis.call('DEL', KEYS[3], KEYS[1])
redis.call('set', KEYS[1], 'again', 'EX', ARGV[1])
redis.pcall('nosuch', KEYS[1])
redis.call('publish', 'events', 'hello')
redis.log(redis.LOG_NOTICE, 'count', 3)
redis.log(redis.LOG_WARNING, 'done')
return 'ok'`
	res := runScript(t, srv, src, []string{"a", "b", "c"}, 60)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	wantCmds := []Command{
		{Name: "set", Args: []string{"a", "v", "PX", "1500"}, Keys: []string{"a"}},
		{Name: "get", Args: []string{"b"}, Keys: []string{"b"}},
		{Name: "hset", Args: []string{"b", "f", "1"}, Keys: []string{"b"}},
		{Name: "expire", Args: []string{"b", "30"}, Keys: []string{"b"}},
		{Name: "del", Args: []string{"c", "a"}, Keys: []string{"c", "a"}},
		{Name: "set", Args: []string{"a", "again", "EX", "60"}, Keys: []string{"a"}},
		{Name: "nosuch", Args: []string{"a"}},
		{Name: "publish", Args: []string{"events", "hello"}},
	}
	if !reflect.DeepEqual(res.Commands, wantCmds) {
		t.Fatalf("Commands =\n%#v\nwant\n%#v", res.Commands, wantCmds)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	check("Touched", res.Touched, []string{"a", "b", "c"})
	check("Written", res.Written, []string{"a", "b"})
	check("TTLs", res.TTLs, map[string]time.Duration{"a": time.Minute, "b": 30 * time.Second})
	check("Logs", res.Logs, []string{"count 3", "done"})
	check("Published", res.Published, []Message{{Channel: "events", Payload: "hello"}})
	check("Violations", res.Violations, []string(nil))
}

func TestRunArguments(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	res := runScript(t, srv, "return ARGV", nil, "s", []byte{0, 1}, 1, int64(-2), 1.5, true, false, uint8(9), 2*time.Second)
	want := []any{"s", "\x00\x01", "1", "-2", "1.5", "1", "0", "9", "2000000000"}
	if res.Err != nil || !reflect.DeepEqual(res.Reply, want) {
		t.Fatalf("Reply = %#v (%v), want %#v", res.Reply, res.Err, want)
	}
	res = runScript(t, srv, "return 1", nil, struct{}{})
	if res.Err == nil || errors.As(res.Err, new(*ErrorReply)) {
		t.Fatalf("unsupported argument: Err = %v", res.Err)
	}
	if res := srv.Run(nil, nil); res.Err == nil {
		t.Fatal("Run(nil) succeeded")
	}
}

// TestNothingPanics runs hostile and broken scripts; each must come back with a
// result and leave the Server usable.
func TestNothingPanics(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	srv.ScriptTimeout = 300 * time.Millisecond
	scripts := []string{
		"local function f() return f() + 1 end return f()",
		"local function f(n) return 1 + f(n + 1) end return f(1)",
		"local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x",
		"local t = {} t[1] = t return t",
		"local t = {} t.err = t return t",
		"error({})",
		"error(nil)",
		"error()",
		"error(setmetatable({}, {__tostring = function() error('nested') end}))",
		"return redis.call('set')",
		"return redis.call('zadd', KEYS[1], 'nan', 'x')",
		"return redis.call(nil)",
		"return redis.call({})",
		"return redis.pcall(function() end)",
		"return redis.call('hset', KEYS[1], '\\0\\255', '\\0')",
		"return redis.call('zrange', KEYS[1], '99999999999999999999', 1)",
		"return string.rep('x', 1000000):len()",
		"return {map = {[{}] = 1}}",
		"return {set = {[function() end] = true}}",
		"return {verbatim_string = 1}",
		"return {ok = {}}",
		"return pcall(error)",
		"return select(-1, 1)",
		"return unpack({}, 1, 100000)",
		"return #{unpack({}, 1, 7990)}",
		"return string.format('%d', 'x')",
		"return tostring()",
		"return tonumber()",
		"return ('x'):bad()",
		"return #nil",
		"return nil .. 'x'",
		"return {} < {}",
		"local s = '' for i = 1, 100000 do s = s .. i end return #s",
		"while true do end",
		"while true do pcall(function() end) end",
		"return math.random(1, 0)",
		"return math.random(1, 2, 3)",
		"return redis.log()",
		"return redis.log(1, {}, nil)",
		"return redis.sha1hex(nil)",
		"return redis.acl_check_cmd()",
		"return redis.acl_check_cmd('nosuch')",
		"return redis.acl_check_cmd('get', 'x')",
		"return load(function() return {} end)",
		"return loadstring('return +')",
		"return table.setn({}, 1)",
		"return table.foreach({1, 2}, function(k, v) if v == 2 then return k end end)",
		"return next({}, 'nokey')",
		"return rawget(1, 2)",
		"return getmetatable('x').__index == string",
	}
	for _, src := range scripts {
		t.Run(src, func(t *testing.T) {
			sc, err := Load("hostile.lua", []byte(src))
			if err != nil {
				return // refusing to load is fine too
			}
			res := srv.Run(sc, []string{"k"})
			if res == nil {
				t.Fatal("nil Result")
			}
			if res.Err != nil && strings.Contains(res.Err.Error(), "internal error") {
				t.Fatalf("harness failed: %v", res.Err)
			}
		})
	}
	if _, err := srv.Do("set", "alive", "1"); err != nil {
		t.Fatalf("server unusable after hostile scripts: %v", err)
	}
}

func TestTimeout(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	srv.ScriptTimeout = 100 * time.Millisecond
	start := time.Now()
	res := runScript(t, srv, "while true do end", nil)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "ran longer than") {
		t.Fatalf("Err = %v", res.Err)
	}
	if errors.As(res.Err, new(*ErrorReply)) {
		t.Fatalf("a timeout is the harness's error, not a reply: %v", res.Err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %v", d)
	}
}

func TestErrorWithoutErrFieldIsAViolation(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	res := runScript(t, srv, "error({})", nil)
	if res.Err == nil || len(res.Violations) != 1 || !strings.Contains(res.Violations[0], "crashes") {
		t.Fatalf("Err = %v, Violations = %q", res.Err, res.Violations)
	}
}

func TestConcurrentRuns(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	sc := mustLoad(t, "return redis.call('incr', KEYS[1])")
	done := make(chan *Result)
	for range 8 {
		go func() {
			for range 10 {
				done <- srv.Run(sc, []string{"n"})
			}
		}()
	}
	for range 80 {
		if res := <-done; res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if v, err := srv.Do("get", "n"); err != nil || v != "80" {
		t.Fatalf("n = %v (%v), want 80", v, err)
	}

	// One Script on many Servers at once, as parallel tests of other packages do.
	others := make(chan *Result)
	for range 8 {
		go func() {
			own := NewServer(NewClock(epoch))
			for range 10 {
				others <- own.Run(sc, []string{"n"})
			}
		}()
	}
	for range 80 {
		if res := <-others; res.Err != nil {
			t.Fatal(res.Err)
		}
	}
}
