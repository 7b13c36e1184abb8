package luatest

import (
	"reflect"
	"testing"
)

// divergence is one known difference between the harness and Redis 7.0.15,
// listed in doc.go, each one something gopher-lua does its own way.
type divergence struct {
	name    string
	src     string
	harness any // the harness's reply, normalized ("(error) ..." for errors)
	redis   any // what Redis 7.0.15 answers, normalized
	// covered is the harness's reply while Lua coverage is recorded
	// (LUAGEN_COVER), where it differs: the counters are in the code.
	covered any
}

var divergences = []divergence{
	{
		name:    "numbers concatenated or formatted with %s",
		src:     "return {1e15 .. '', (1/3) .. '', 2^53 .. ''}",
		harness: []any{"1000000000000000", "0.3333333333333333", "9007199254740992"},
		redis:   []any{"1e+15", "0.33333333333333", "9.007199254741e+15"},
	},
	{
		name:    "strings in arithmetic read as octal",
		src:     "return '010' + 0",
		harness: int64(8),
		redis:   int64(10),
	},
	{
		name:    "runtime errors do not name the variable",
		src:     "local t = nil\nreturn t.x",
		harness: "(error) ERR user_script:2: attempt to index a nil value script: 5e383a4a9d10a799a7bdaae726524fbbe9af80c0, on @user_script:2.",
		redis:   "(error) ERR user_script:2: attempt to index local 't' (a nil value) script: 5e383a4a9d10a799a7bdaae726524fbbe9af80c0, on @user_script:2.",
	},
	{
		name:    "library argument errors say nil for a missing argument",
		src:     "return string.rep()",
		harness: "(error) ERR user_script:1: bad argument #1 to 'rep' (string expected, got nil) script: 312a592c4be4cbcb6748209b815c8eb090f3ca71, on @user_script:1.",
		redis:   "(error) ERR user_script:1: bad argument #1 to 'rep' (string expected, got no value) script: 312a592c4be4cbcb6748209b815c8eb090f3ca71, on @user_script:1.",
	},
	{
		name:    "syntax errors are gopher-lua's",
		src:     "return select(2, loadstring('x ='))",
		harness: "[string \"x =\"] at EOF:   syntax error\n",
		redis:   `[string "x ="]:1: unexpected symbol near '<eof>'`,
	},
	{
		name:    "table iteration order is insertion order",
		src:     "local t = {} t.b = 1 t.a = 2 t.c = 3 local o = {} for k in pairs(t) do o[#o + 1] = k end return {o, cjson.encode(t)}",
		harness: []any{[]any{"b", "a", "c"}, `{"b":1,"a":2,"c":3}`},
		redis:   []any{[]any{"a", "c", "b"}, `{"a":2,"c":3,"b":1}`},
	},
	{
		name:    "length of a table with holes",
		src:     "local t = {} t[1] = 1 t[2] = 2 t[3] = 3 t[5] = 5 t[3] = nil return #t",
		harness: int64(5),
		redis:   int64(2),
	},
	{
		name:    "string.dump gives gopher-lua's code",
		src:     "local d = string.dump(function() return 1 end) return {d:sub(1, 12) == '\\27LuaQ\\0\\1\\4\\8\\4\\8\\0', #d}",
		harness: []any{int64(1), int64(291)},
		covered: []any{int64(1), int64(657)},
		redis:   []any{int64(1), int64(102)},
	},
	{
		name:    "calls nest 3999 deep, not 19998",
		src:     "local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end local ok, e = pcall(f, 4000) return {tostring(ok), e}",
		harness: []any{"false", "user_script:1: stack overflow"},
		redis:   []any{"true", int64(4000)},
	},
	{
		name:    "metamethods nest beyond Lua 5.1's C-call limit",
		src:     "local t = setmetatable({}, {__index = function(t, k) if k > 300 then return k end return t[k + 1] end}) return t[1]",
		harness: int64(301),
		redis:   "(error) ERR user_script:1: C stack overflow script: e30dbd8fa07c184182047304d3d61baa4bc060bf, on @user_script:1.",
	},
}

// Each divergence doc.go lists is still there, exactly as documented: the
// harness answers as listed and a real Redis 7.0 as listed.
func TestDivergencesArePinned(t *testing.T) {
	client := startRedis(t)
	conn := dialRESP(t, client.Options().Addr)
	for _, d := range divergences {
		t.Run(d.name, func(t *testing.T) {
			srv := NewServer(nil)
			res := srv.Run(mustLoad(t, d.src), nil)
			got := normalize(res.Typed, res.Err)
			pinned := d.harness
			if coverDir() != "" && d.covered != nil {
				pinned = d.covered
			}
			if !reflect.DeepEqual(got, pinned) {
				t.Errorf("harness: %#v, pinned %#v", got, pinned)
			}
			want := normalize(conn.eval(d.src, nil, nil))
			if !reflect.DeepEqual(want, d.redis) {
				t.Errorf("redis: %#v, pinned %#v", want, d.redis)
			}
		})
	}
}

// Syntax Lua 5.1 refuses that gopher-lua's parser accepts: Redis refuses to
// load the script, the harness runs it.
func TestDivergenceLaxSyntax(t *testing.T) {
	client := startRedis(t)
	conn := dialRESP(t, client.Options().Addr)
	src := "return 1e"
	if _, err := Load("lax.lua", []byte(src)); err != nil {
		t.Fatalf("gopher-lua now refuses %q (%v): drop the divergence from doc.go", src, err)
	}
	want := "(error) ERR Error compiling script (new function): user_script:1: malformed number near '1e'"
	if got := normalize(conn.eval(src, nil, nil)); got != want {
		t.Fatalf("redis: %#v, pinned %#v", got, want)
	}
}

// A new Server's math.random starts where a new redis-server's does.
func TestMathRandomStartsAsANewRedis(t *testing.T) {
	client := startRedis(t) // a new server: nothing called math.random yet
	conn := dialRESP(t, client.Options().Addr)
	src := "return {math.random(1000000), math.random(10, 20), tostring(math.random())}"
	want := normalize(conn.eval(src, nil, nil))
	srv := NewServer(nil)
	res := srv.Run(mustLoad(t, src), nil)
	if got := normalize(res.Typed, res.Err); !reflect.DeepEqual(got, want) {
		t.Fatalf("harness %#v, redis %#v", got, want)
	}
	// The generator goes on across runs, as Redis's does across scripts.
	want = normalize(conn.eval(src, nil, nil))
	res = srv.Run(mustLoad(t, src), nil)
	if got := normalize(res.Typed, res.Err); !reflect.DeepEqual(got, want) {
		t.Fatalf("second run: harness %#v, redis %#v", got, want)
	}
}
