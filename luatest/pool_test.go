package luatest

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// drainPool closes every idle pooled state, so the next run builds a new one
// and the runs after it reuse that one (the pool is last in, first out).
func drainPool(t *testing.T) {
	t.Helper()
	vmPool.mu.Lock()
	defer vmPool.mu.Unlock()
	for _, vm := range vmPool.free {
		vm.close()
	}
	vmPool.free = nil
}

// fingerprintSrc describes everything a script can reach from the globals and
// the string metatable: every path, the type of what is there, the length of
// every table and its metatable. With ARGV[1] == 'ids' it also names functions
// and tables (but KEYS and ARGV) by identity, which only compares within one
// Lua state.
const fingerprintSrc = `
local ids = ARGV[1] == 'ids'
local seen, out = {}, {}
local function walk(path, v, depth)
  local t = type(v)
  local line = path .. ' ' .. t
  if t ~= 'table' and t ~= 'function' then
    line = line .. ' ' .. tostring(v)
  elseif ids and path ~= '_G.KEYS' and path ~= '_G.ARGV' then
    -- KEYS and ARGV are new tables in every run, as in Redis.
    line = line .. ' ' .. tostring(v)
  end
  out[#out + 1] = line
  if t == 'table' and not seen[v] and depth < 6 then
    seen[v] = true
    out[#out + 1] = path .. ' #' .. #v
    local mt = getmetatable(v)
    if mt ~= nil then walk(path .. '<mt>', mt, depth + 1) end
    for k, x in pairs(v) do walk(path .. '.' .. tostring(k), x, depth + 1) end
    -- Plain indexing, which finds what a write left in a read-only proxy
    -- itself (pairs and rawget show the table behind it).
    for _, k in ipairs({'x', 'y', 'z', 'foo', 'leaked', 'extra', 'stash', '__index', 1}) do
      local ok, x = pcall(function() return v[k] end)
      out[#out + 1] = path .. '[' .. tostring(k) .. '] ' .. tostring(ok) .. ' ' .. type(x)
    end
  end
end
walk('_G', _G, 0)
walk('<string mt>', getmetatable(''), 0)
out[#out + 1] = 'string mt index is string: ' .. tostring(getmetatable('').__index == string)
out[#out + 1] = 'method call: ' .. ('abc'):upper()
out[#out + 1] = 'global counter_local: ' .. tostring(rawget(_G, 'counter_local'))
table.sort(out)
return table.concat(out, '\n')
`

// attackSrc tries every way a script could leave something behind for the next
// run on the same Lua state. Each attempt runs in pcall; the reply lists the
// attempts that succeeded.
const attackSrc = `
local succeeded = {}
local function try(name, f)
  if pcall(f) then succeeded[#succeeded + 1] = name end
end
try('global write', function() x = 1 end)
try('global overwrite', function() tostring = nil end)
try('KEYS global', function() KEYS = {'evil'} end)
try('_G field', function() _G.y = 1 end)
try('rawset _G', function() rawset(_G, 'z', 1) end)
try('setmetatable _G', function() setmetatable(_G, {}) end)
try('string field', function() string.foo = 1 end)
try('string method', function() string.upper = string.lower end)
try('rawset string', function() rawset(string, 'foo', 1) end)
try('table.insert string', function() table.insert(string, 'x') end)
try('table.insert string pos', function() table.insert(string, 1, 'x') end)
try('setmetatable string', function() setmetatable(string, {__index = function() return 1 end}) end)
try('math field', function() math.random = function() return 4 end end)
try('table field', function() table.concat = nil end)
try('redis field', function() redis.call = nil end)
try('redis constant', function() redis.LOG_WARNING = 99 end)
try('string mt field', function() getmetatable('').foo = 1 end)
try('string mt index', function() getmetatable('').__index = {upper = function() return 'evil' end} end)
try('rawset string mt', function() rawset(getmetatable(''), '__index', nil) end)
try('setmetatable string mt', function() setmetatable(getmetatable(''), {}) end)
try('string lib through mt', function() getmetatable('').__index.upper = nil end)
try('globals mt index', function() getmetatable(_G).__index = function() return 'leak' end end)
try('rawset globals mt', function() rawset(getmetatable(_G), '__index', nil) end)
try('loadstring global', function() loadstring('leaked = 1')() end)
try('chunk name', function() assert(loadstring('return 1', '=user_script')) end)
try('table.sort string', function() table.sort(string) end)
try('table.remove string', function() table.remove(string) end)
try('KEYS write', function() KEYS[1] = 'changed' KEYS.extra = 'x' end)
try('ARGV grow', function() table.insert(ARGV, 'more') end)
try('KEYS metatable', function() setmetatable(KEYS, {__index = function() return 'leak' end}) end)
local counter_local = 41
try('closure stash', function() KEYS.stash = function() counter_local = counter_local + 1 return counter_local end end)
try('randomseed', function() math.randomseed(7) end)
return succeeded
`

// Runs that reuse a Lua state cannot see what an earlier run did to it: the
// environment a script sees after a run that tried every kind of write is the
// one it saw before, identity of every function and table included, and the one
// a new state shows.
func TestPooledStatesAreIsolated(t *testing.T) {
	fresh := NewServer(NewClock(epoch))
	fresh.FreshState = true
	fingerprint := mustLoad(t, fingerprintSrc)
	attack := mustLoad(t, attackSrc)
	keys, args := []string{"k"}, "a"
	want := fresh.Run(fingerprint, keys, "no ids")
	if want.Err != nil {
		t.Fatal(want.Err)
	}
	for _, line := range []string{"_G.cjson table", "_G.string.upper function", "<string mt>.__index table", "string mt index is string: true", "method call: ABC", "_G.KEYS table"} {
		if !strings.Contains(want.Reply.(string), line) {
			t.Fatalf("the fingerprint misses %q:\n%s", line, want.Reply)
		}
	}

	drainPool(t)
	srv := NewServer(NewClock(epoch))
	before := srv.Run(fingerprint, keys, "ids")
	pooledPlain := srv.Run(fingerprint, keys, "no ids")
	res := srv.Run(attack, keys, args)
	after := srv.Run(fingerprint, keys, "ids")
	for _, r := range []*Result{before, pooledPlain, res, after} {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if ids := []uint64{before.stateID, pooledPlain.stateID, res.stateID, after.stateID}; ids[0] != ids[1] || ids[0] != ids[2] || ids[0] != ids[3] {
		t.Fatalf("the runs did not share one Lua state (state ids %v): nothing was tested", ids)
	}
	// Only what Redis 7.0 lets a script change is changed: its own KEYS and
	// ARGV, and the random generator (which Redis keeps across scripts too).
	wantSucceeded := []any{"chunk name", "table.sort string", "table.remove string", "KEYS write", "ARGV grow", "KEYS metatable", "closure stash", "randomseed"}
	if !reflect.DeepEqual(res.Reply, wantSucceeded) {
		t.Errorf("attempts that succeeded = %q, want %q", res.Reply, wantSucceeded)
	}
	if after.Reply != before.Reply {
		t.Errorf("the environment changed across runs:\n%s", lineDiff(before.Reply.(string), after.Reply.(string)))
	}
	if pooledPlain.Reply != want.Reply {
		t.Errorf("a pooled state differs from a new one:\n%s", lineDiff(want.Reply.(string), pooledPlain.Reply.(string)))
	}

	// Per-run state on the Go side: the error position of the next run is not
	// taken from the chunk name the attack registered, and the next Server's
	// random generator starts where a new redis-server's does.
	errRun := srv.Run(mustLoad(t, "error('x')"), nil)
	if msg := errorText(errRun.Err); !strings.HasSuffix(msg, "on @user_script:1.") || errRun.stateID != res.stateID {
		t.Errorf("error after the attack = %q (state %d, attack's %d)", msg, errRun.stateID, res.stateID)
	}
	random := mustLoad(t, "return {math.random(1000000), math.random(1000000)}")
	other := NewServer(NewClock(epoch))
	other.FreshState = true
	wantRandom := other.Run(random, nil)
	gotRandom := NewServer(NewClock(epoch)).Run(random, nil)
	if gotRandom.stateID != res.stateID || !reflect.DeepEqual(gotRandom.Reply, wantRandom.Reply) {
		t.Errorf("math.random on a new Server after the attack = %v (state %d), on a fresh state %v", gotRandom.Reply, gotRandom.stateID, wantRandom.Reply)
	}
}

// Each run sees its own Server's clock, keys and arguments, whichever Servers
// used the state before.
func TestPooledStateFollowsItsServer(t *testing.T) {
	drainPool(t)
	sc := mustLoad(t, "return {redis.call('time')[1], KEYS[1], ARGV[1], #KEYS, #ARGV, redis.call('get', KEYS[1])}")
	a := NewServer(NewClock(time.Unix(1000, 0)))
	b := NewServer(NewClock(time.Unix(2000, 0)))
	if _, err := a.Do("set", "ka", "in a"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Do("set", "kb", "in b"); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for i := range 3 {
		ra := a.Run(sc, []string{"ka"}, "x", "y")
		rb := b.Run(sc, []string{"kb"})
		if want := []any{"1000", "ka", "x", int64(1), int64(2), "in a"}; !reflect.DeepEqual(ra.Reply, want) {
			t.Fatalf("round %d on a: %#v (%v), want %#v", i, ra.Reply, ra.Err, want)
		}
		if want := []any{"2000", "kb"}; !reflect.DeepEqual(rb.Reply, want) {
			// ARGV[1] is nil, so the array stops there.
			t.Fatalf("round %d on b: %#v (%v), want %#v", i, rb.Reply, rb.Err, want)
		}
		ids = append(ids, ra.stateID, rb.stateID)
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("runs used states %v: expected one reused state", ids)
		}
	}
}

// A run that overran its timeout leaves its state interrupted: it is dropped,
// and the next run gets another one that works.
func TestOverrunStateIsDropped(t *testing.T) {
	drainPool(t)
	srv := NewServer(NewClock(epoch))
	srv.ScriptTimeout = 50 * time.Millisecond
	loop := srv.Run(mustLoad(t, "while true do end"), nil)
	if loop.Err == nil || !strings.Contains(loop.Err.Error(), "ran longer than") {
		t.Fatalf("Err = %v", loop.Err)
	}
	next := srv.Run(mustLoad(t, "return 1"), nil)
	if next.Err != nil || next.Reply != int64(1) {
		t.Fatalf("next run: %v %v", next.Reply, next.Err)
	}
	if next.stateID == loop.stateID {
		t.Fatalf("the interrupted state %d was reused", loop.stateID)
	}
}

// Many goroutines run scripts on their own Servers and on a shared one at once;
// every reply is the run's own, and every increment is counted exactly once.
func TestPooledStatesConcurrent(t *testing.T) {
	const goroutines, runs = 16, 200
	shared := NewServer(NewClock(epoch))
	sc := mustLoad(t, `
local n = redis.call('incr', KEYS[1])
redis.call('incr', KEYS[2])
local ok = pcall(function() leaked = ARGV[1] end)
return {ARGV[1], KEYS[1], tostring(ok)}`)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := NewServer(NewClock(epoch))
			for i := range runs {
				arg := fmt.Sprintf("g%d-%d", g, i)
				for _, srv := range []*Server{own, shared} {
					res := srv.Run(sc, []string{"own", "total"}, arg)
					if want := []any{arg, "own", "false"}; !reflect.DeepEqual(res.Reply, want) {
						errs <- fmt.Errorf("goroutine %d run %d: %#v (%v), want %#v", g, i, res.Reply, res.Err, want)
						return
					}
				}
			}
			if v, err := own.Do("get", "own"); err != nil || v != fmt.Sprint(runs) {
				errs <- fmt.Errorf("goroutine %d: own counter %v (%v), want %d", g, v, err, runs)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, key := range []string{"own", "total"} {
		if v, err := shared.Do("get", key); err != nil || v != fmt.Sprint(goroutines*runs) {
			t.Errorf("shared %s = %v (%v), want %d", key, v, err, goroutines*runs)
		}
	}
}

// A source is compiled once, whatever the file name it is loaded under.
func TestLoadCompilesOnce(t *testing.T) {
	src := []byte("return 'compiled once " + t.Name() + "'")
	a, err := Load("a.lua", src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load("b.lua", src)
	if err != nil {
		t.Fatal(err)
	}
	if a.proto != b.proto {
		t.Error("the same source was compiled twice")
	}
	if a.Info().File != "a.lua" || b.Info().File != "b.lua" || a.File() != "a.lua" || b.File() != "b.lua" {
		t.Errorf("file names: %q %q %q %q", a.Info().File, b.Info().File, a.File(), b.File())
	}
	if _, err := Load("bad.lua", []byte("return (")); err == nil || !strings.Contains(err.Error(), "bad.lua") {
		t.Errorf("a syntax error = %v, want one naming bad.lua", err)
	}
}

// lineDiff lists the lines only in a (-) or only in b (+).
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for l := range ma {
		if !mb[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
