package luatest

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// confCase is one script run both on the harness and on a real redis-server.
type confCase struct {
	name  string
	setup [][]any // commands run first on both (Server.Do / client.Do)
	src   string
	keys  []string
	args  []any
	// samePlace: Lua 5.1 names the variable in this runtime error and
	// gopher-lua cannot; both must be errors raised at the same place.
	samePlace bool
}

// conformanceCases have the same reply (or error text) and leave the same
// keyspace on the harness and on Redis 7.0. They read TTLs with TTL, not PTTL:
// Redis 7.0 reads its real clock for each command, so a PTTL right after an
// EXPIRE may already be a millisecond short, while the harness's clock stands
// still during a run. TTLs of absolute deadlines (EXPIREAT) are only compared
// through the keyspace, with a tolerance: the two clocks differ by milliseconds.
var conformanceCases = []confCase{
	// Lua → Redis reply conversion.
	{name: "integer", src: "return 42"},
	{name: "float truncates", src: "return 3.7"},
	{name: "negative float truncates", src: "return -3.7"},
	{name: "huge number", src: "return 1e30"},
	{name: "infinity", src: "return 1/0"},
	{name: "nan", src: "return 0/0"},
	{name: "math.huge", src: "return math.huge"},
	{name: "string", src: "return 'hello'"},
	{name: "binary string", src: "return 'a\\0b\\255'"},
	{name: "true", src: "return true"},
	{name: "false", src: "return false"},
	{name: "nil", src: "return nil"},
	{name: "nothing", src: "local x = 1"},
	{name: "function", src: "return function() end"},
	{name: "first value only", src: "return 1, 2"},
	{name: "array stops at nil", src: "return {1, 2, nil, 3}"},
	{name: "array false is nil", src: "return {1, false, 3}"},
	{name: "array true is 1", src: "return {1, true, 3}"},
	{name: "array of function", src: "return {function() end, 2}"},
	{name: "sparse", src: "local t = {} t[1] = 1 t[3] = 3 return t"},
	{name: "nested", src: "return {{1, {2, 'x'}}, 'y', {}}"},
	{name: "empty table", src: "return {}"},
	{name: "hash part ignored", src: "return {1, 2, x = 3}"},
	{name: "ok", src: "return {ok = 'FINE'}"},
	{name: "ok newline", src: "return {ok = 'a\\r\\nb'}"},
	{name: "err", src: "return {err = 'BAD thing'}"},
	{name: "err without code", src: "return {err = 'nocode'}"},
	{name: "err newline", src: "return {err = 'a\\nb'}"},
	{name: "err number is array", src: "return {err = 5}"},
	{name: "ok number is array", src: "return {ok = 5, 1, 2}"},
	{name: "err beats ok", src: "return {ok = 'fine', err = 'BAD x'}"},
	{name: "double", src: "return {double = 0.1}"},
	{name: "double inf", src: "return {double = 1/0}"},
	{name: "double string is array", src: "return {double = 'x'}"},
	{name: "big_number", src: "return {big_number = '123'}"},
	{name: "verbatim", src: "return {verbatim_string = {format = 'txt', string = 'hello'}}"},
	{name: "map", src: "return {map = {a = 1}}"},
	{name: "set", src: "return {set = {x = true}}"},
	{name: "ok before double", src: "return {ok = 'a', double = 1.5}"},
	{name: "status and error in array", src: "return {1, {ok = 'fine'}, {err = 'BAD thing'}, 4}"},
	{name: "error_reply", src: "return redis.error_reply('NOT_OWNER lock held by another owner')"},
	{name: "error_reply one word", src: "return redis.error_reply('oops')"},
	{name: "error_reply dash", src: "return redis.error_reply('-oops')"},
	{name: "error_reply crlf", src: "return redis.error_reply('CODE msg\\r\\n')"},
	{name: "error_reply bad", src: "return redis.error_reply(1)"},
	{name: "status_reply", src: "return redis.status_reply('FINE')"},
	{name: "status_reply bad", src: "return redis.status_reply()"},

	// Errors raised by the script.
	{name: "error string", src: "error('boom')"},
	{name: "error tail call", src: "local x = 1\nreturn error('tail')"},
	{name: "error level 2", src: "local function f()\n  error('up', 2)\nend\nf()"},
	{name: "loadstring error", src: "local f = loadstring('\\nerror(\\'in chunk\\')')\nf()"},
	{name: "loadstring named", src: "local f = loadstring('error(\\'named\\')', '=mychunk')\nf()"},
	{name: "load", src: "local parts = {'return ', '4', '2'} local i = 0 return load(function() i = i + 1 return parts[i] end)()"},
	{name: "error level 0", src: "error('boom', 0)"},
	{name: "error on line 3", src: "local a = 1\nlocal b = 2\nerror('line three')"},
	{name: "error in function", src: "local function f()\n  error('deep')\nend\nf()"},
	{name: "error newline", src: "error('a\\nb')"},
	{name: "error number", src: "error(5)"},
	{name: "error table", src: "error({err = 'MY thing'})"},
	{name: "error error_reply", src: "error(redis.error_reply('MY thing'))"},
	{name: "arith on nil constant", src: "return 1 + nil"},
	{name: "arith on nil local", samePlace: true, src: "local t = {}\nreturn t.x * 2"},
	{name: "concat nil", samePlace: true, src: "local t = {}\nreturn 'a' .. t.x"},
	{name: "index nil", samePlace: true, src: "local t = {}\nreturn t.x.y"},
	{name: "compare", src: "return 1 < 'x'"},
	{name: "length of nil", src: "return #nil"},
	{name: "length of number", src: "return #5"},
	{name: "length of boolean", src: "local ok, e = pcall(function() return #true end) return e"},
	{name: "minus table", src: "return -{}"},
	{name: "minus string", src: "return -'x'"},
	{name: "minus numeric strings", src: "return {-'5', -' 0x10 ', -'1e2'}"},
	{name: "minus nil", src: "return -nil"},
	{name: "call nil", samePlace: true, src: "local f\nreturn f()"},
	{name: "call number in pcall", src: "return {pcall(5)}"},
	{name: "call table", samePlace: true, src: "local t = {}\nreturn t()"},
	{name: "call string method", src: "return ('x')()"},
	{name: "assert", src: "assert(false)"},
	{name: "assert message", src: "assert(1 == 2, 'not equal')"},

	// Globals and libraries.
	{name: "create global", src: "x = 1"},
	{name: "create global in function", src: "local function f() y = 1 end f()"},
	{name: "read undefined global", src: "return x"},
	{name: "call undefined global", src: "return nofn()"},
	{name: "overwrite builtin", src: "tostring = nil"},
	{name: "modify string lib", src: "string.x = 1"},
	{name: "modify redis lib", src: "redis.call = nil"},
	{name: "rawset _G", src: "rawset(_G, 'z', 1) return z"},
	{name: "setmetatable _G", src: "setmetatable(_G, nil)"},
	{name: "setmetatable string", src: "setmetatable(string, {})"},
	{name: "_G is globals", src: "return _G.redis == redis and _G._G == _G"},
	{name: "KEYS and ARGV", src: "return {#KEYS, KEYS[1], KEYS[2], #ARGV, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]}", keys: []string{"ka", "kb"}, args: []any{"a1", 7, 2.5, true, []byte("bin")}},
	{name: "KEYS writable", src: "KEYS[1] = 'changed' return KEYS[1]", keys: []string{"k"}},
	{name: "os", src: "return os"},
	{name: "io", src: "return io"},
	{name: "debug", src: "return debug"},
	{name: "print", src: "return print"},
	{name: "dofile", src: "return dofile"},
	{name: "loadfile", src: "return loadfile"},
	{name: "require", src: "return require"},
	{name: "module", src: "return module"},
	{name: "package", src: "return package"},
	{name: "getfenv", src: "return getfenv"},
	{name: "setfenv", src: "return setfenv"},
	{name: "newproxy", src: "return newproxy"},
	{name: "available builtins", src: `return {type(assert), type(collectgarbage), type(error), type(gcinfo), type(getmetatable), type(ipairs), type(load), type(loadstring), type(next), type(pairs), type(pcall), type(rawequal), type(rawget), type(rawset), type(select), type(setmetatable), type(tonumber), type(tostring), type(type), type(unpack), type(xpcall), _VERSION}`},
	{name: "string lib", src: `local n = {} for _, f in ipairs({'byte','char','dump','find','format','gfind','gmatch','gsub','len','lower','match','rep','reverse','sub','upper'}) do n[#n+1] = type(string[f]) end return n`},
	{name: "table lib", src: `local n = {} for _, f in ipairs({'concat','foreach','foreachi','getn','insert','maxn','remove','setn','sort'}) do n[#n+1] = type(table[f]) end return n`},
	{name: "math lib", src: `local n = {} for _, f in ipairs({'abs','acos','asin','atan','atan2','ceil','cos','cosh','deg','exp','floor','fmod','frexp','ldexp','log','log10','max','min','mod','modf','pow','rad','random','randomseed','sin','sinh','sqrt','tan','tanh'}) do n[#n+1] = type(math[f]) end return n`},
	{name: "loadstring", src: "return loadstring('return 1 + 1')()"},
	{name: "loadstring global", src: "return loadstring('x = 1')()"},
	{name: "pairs over redis", src: "local n = 0 for k, v in pairs(redis) do n = n + 1 end return n > 10"},
	{name: "rawget string", src: "return type(rawget(string, 'format'))"},
	// Lua 5.1 shares one constant slot between 0 and -0 in a chunk, so -0 and 1/0 live in separate scripts.
	{name: "tostring numbers", src: "return {tostring(1700000000000000), tostring(1/3), tostring(1/0), tostring(-1/0), tostring(0/0), tostring(100), tostring(2^53), tostring(1e100), tostring(-1.5e-10), tostring(123456789012345)}"},
	{name: "tostring negative zero", src: "return tostring(-0)"},
	{name: "tostring others", src: "return {tostring(nil), tostring(true), tostring('s')}"},
	{name: "tonumber", src: "return {tonumber('0x10'), tonumber('  5  '), tonumber('5e2'), tonumber(' 0x10 '), tonumber('10', 2), tonumber('ff', 16), tonumber('0xff', 16), tonumber('z', 36), tonumber(' 7 ', 8), '10' + 1, tonumber('.5') * 2, tonumber('-3')}"},
	{name: "tonumber fails", src: "return {type(tonumber('1e')), type(tonumber('')), type(tonumber('x')), type(tonumber('12', 2)), type(tonumber({})), type(tonumber('1 2'))}"},
	{name: "math.random seeded", src: "math.randomseed(42) return {math.random(100), math.random(100), math.random(1, 1000000), tostring(math.random())}"},
	{name: "math.random empty", src: "return math.random(0)"},
	{name: "pcall redis.call error", src: "local ok, e = pcall(redis.call, 'incr') return {tostring(ok), type(e), e}"},
	{name: "pcall error table", src: "local ok, e = pcall(error, {err = 'X y'}) return {type(e), e}"},
	{name: "pcall error_reply", src: "local ok, e = pcall(function() error(redis.error_reply('X y')) end) return e"},
	{name: "pcall string error", src: "local ok, e = pcall(error, 'x') return e"},
	{name: "pcall multiple returns", src: "return {pcall(function() return 1, 2 end)}"},
	{name: "stack overflow", src: "local function f(n) return 1 + f(n + 1) end return f(1)"},
	{name: "deep recursion", src: "local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return f(3999)"},
	{name: "recursion through pcall", src: "local function f(n) if n == 0 then return 0 end local ok, r = pcall(f, n - 1) return r end return f(9998)"},
	{name: "error nil", src: "error(nil)"},
	{name: "unpack limit", src: "return unpack({}, 1, 100000)"},
	{name: "unpack below limit", src: "return #{unpack({}, 1, 7990)}"},
	{name: "unpack", src: "return {unpack({1, 2, 3}, 2)}"},
	{name: "select", src: "return {select(-1, 1, 2), select('#', 1, 2, 3), select(2, 'a', 'b', 'c')}"},
	{name: "pcall nil", src: "local ok, e = pcall(nil) return {tostring(ok), e}"},
	{name: "xpcall sees table", src: "local ok, e = xpcall(function() redis.call('incr') end, function(e) return type(e) .. ':' .. e.err end) return e"},

	// The redis table.
	{name: "redis.call no args", src: "return redis.call()"},
	{name: "redis.pcall no args", src: "return redis.pcall()"},
	{name: "redis.call table arg", src: "return redis.call('set', 'k', {})", keys: []string{"k"}},
	{name: "redis.pcall table arg", src: "return redis.pcall('set', 'k', {})", keys: []string{"k"}},
	{name: "redis.pcall bool arg", src: "return redis.pcall('set', 'k', true)", keys: []string{"k"}},
	{name: "redis.call unknown", src: "return redis.call('nosuch', 'a')"},
	{name: "redis.pcall unknown", src: "return redis.pcall('nosuch', 'a')"},
	{name: "redis.call number as command", src: "return redis.call(1)"},
	{name: "redis.call arity", src: "return redis.call('get')"},
	{name: "redis.pcall arity", src: "return redis.pcall('get', 'a', 'b')"},
	{name: "redis.call upper case", src: "return redis.call('SET', 'k', 'v')", keys: []string{"k"}},
	{name: "redis.call status", src: "local r = redis.call('set', 'k', 'v') return {type(r), r.ok}", keys: []string{"k"}},
	{name: "redis.call nil bulk", src: "local r = redis.call('get', 'nokey') return {type(r), tostring(r)}", keys: []string{"nokey"}},
	{name: "redis.call integer", src: "local r = redis.call('incr', 'n') return {type(r), r}", keys: []string{"n"}},
	{name: "redis.call bulk", src: "redis.call('set', 'k', 'v') local r = redis.call('get', 'k') return {type(r), r}", keys: []string{"k"}},
	{name: "redis.call array with nils", src: "redis.call('hset', 'h', 'a', '1') local r = redis.call('hmget', 'h', 'a', 'b', 'c') return {#r, r[1], type(r[2]), tostring(r[3])}", keys: []string{"h"}},
	{name: "redis.call empty array", src: "local r = redis.call('hgetall', 'h') return {type(r), #r}", keys: []string{"h"}},
	{name: "redis.pcall error table", src: "redis.call('set', 'k', 'abc') local r = redis.pcall('incr', 'k') return {type(r), r.err}", keys: []string{"k"}},
	{name: "redis.call error raised", src: "redis.call('set', 'k', 'abc')\nreturn redis.call('incr', 'k')", keys: []string{"k"}},
	{name: "redis.call wrongtype raised", src: "redis.call('set', 'k', 'abc')\nreturn redis.call('hget', 'k', 'f')", keys: []string{"k"}},
	{name: "number arguments", src: `redis.call('set', 'a', 1700000000123) redis.call('set', 'b', 0.1) redis.call('set', 'c', 1e20) redis.call('set', 'e', 1/0) redis.call('set', 'f', 2^63) redis.call('set', 'g', 1.5) redis.call('set', 'h', 100) redis.call('set', 'i', 1e16) redis.call('set', 'j', 1e17) redis.call('set', 'k', -1/0) redis.call('set', 'l', 0/0) redis.call('set', 'm', -2^63) redis.call('set', 'n', 123456789012345678) redis.call('set', 'o', -7)
		local out = {} for _, k in ipairs({'a','b','c','e','f','g','h','i','j','k','l','m','n','o'}) do out[#out+1] = redis.call('get', k) end return out`, keys: []string{"a", "b", "c", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o"}},
	{name: "negative zero argument", src: "redis.call('set', 'd', -0.0) return redis.call('get', 'd')", keys: []string{"d"}},
	{name: "sha1hex", src: "return {redis.sha1hex(''), redis.sha1hex('abc'), redis.sha1hex(123)}"},
	{name: "sha1hex no args", src: "return redis.sha1hex()"},
	{name: "log", src: "redis.log(redis.LOG_WARNING, 'hi', 1) return 'ok'"},
	{name: "log one arg", src: "return redis.log(redis.LOG_WARNING)"},
	{name: "log bad level", src: "return redis.log(99, 'x')"},
	{name: "log level string", src: "return redis.log('x', 'y')"},
	{name: "log constants", src: "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}"},
	{name: "repl constants", src: "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}"},
	{name: "version", src: "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}"},
	{name: "setresp 2", src: "return redis.setresp(2)"},
	{name: "setresp none", src: "return redis.setresp()"},
	{name: "setresp 4", src: "return redis.setresp(4)"},
	{name: "set_repl", src: "return redis.set_repl(redis.REPL_ALL)"},
	{name: "set_repl bad", src: "return redis.set_repl(99)"},
	{name: "replicate_commands", src: "return redis.replicate_commands()"},
	{name: "breakpoint", src: "return redis.breakpoint()"},
	{name: "ping", src: "local r = redis.call('ping') return {type(r), r.ok}"},
	{name: "ping message", src: "return redis.call('ping', 'hello')"},

	// Read-only scripts.
	{name: "no-writes refuses writes", src: "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')", keys: []string{"k"}},
	{name: "no-writes pcall", src: "#!lua flags=no-writes\nreturn redis.pcall('set', 'k', 'v')", keys: []string{"k"}},
	{name: "no-writes publish", src: "#!lua flags=no-writes\nreturn redis.call('publish', 'c', 'm')"},
	{name: "no-writes reads", src: "#!lua flags=no-writes\nreturn redis.call('get', 'k')", setup: [][]any{{"set", "k", "v"}}, keys: []string{"k"}},
	{name: "no-writes pfcount", src: "#!lua flags=no-writes\nreturn redis.pcall('pfcount', 'k')", keys: []string{"k"}},
	{name: "no-writes spublish", src: "#!lua flags=no-writes\nreturn redis.pcall('spublish', 'c', 'm')"},
	{name: "blpop not allowed", src: "return redis.pcall('blpop', 'k', 0)", keys: []string{"k"}},
	{name: "subscribe not allowed", src: "return redis.pcall('subscribe', 'c')"},
	{name: "multi not allowed", src: "return redis.pcall('multi')"},
	{name: "eval not allowed", src: "return redis.pcall('eval', 'return 1', 0)"},
	{name: "unknown subcommand", src: "return redis.pcall('xgroup', 'nosuch', 'k')", keys: []string{"k"}},
	{name: "container alone", src: "return redis.pcall('xgroup')"},
	{name: "subcommand arity", src: "return redis.pcall('object', 'encoding')"},
	{name: "acl_check_cmd", src: "return {redis.acl_check_cmd('get', 'k'), pcall(redis.acl_check_cmd, 'nosuch'), pcall(redis.acl_check_cmd, 'xgroup', 'nosuch')}"},
	{name: "shebang keeps lines", src: "#!lua\nlocal a = 1\nerror('on three')", keys: []string{"k"}},
}

// Commands: each case runs one command family through redis.pcall.
func init() {
	cmd := func(name string, setup [][]any, keys []string, calls ...string) confCase {
		var b strings.Builder
		b.WriteString("local out = {}\n")
		for _, c := range calls {
			fmt.Fprintf(&b, "out[#out+1] = redis.pcall(%s)\n", c)
		}
		b.WriteString("return out\n")
		return confCase{name: name, setup: setup, src: b.String(), keys: keys}
	}
	k := []string{"k", "k2", "h", "z", "s"}
	str := [][]any{{"set", "s", "abc"}}
	hash := [][]any{{"hset", "h", "a", "1", "b", "2", "c", "x"}}
	zset := [][]any{{"zadd", "z", "1", "a", "2", "b", "3", "c", "3", "d", "-1.5", "e"}}
	conformanceCases = append(conformanceCases,
		cmd("get", str, k, `'get', 'k'`, `'get', 's'`, `'get', 'h'`, `'get', 'k', 'x'`),
		cmd("get wrongtype", hash, k, `'get', 'h'`),
		cmd("set options", nil, k,
			`'set', 'k', 'v'`, `'set', 'k', 'w', 'nx'`, `'get', 'k'`, `'set', 'k', 'w', 'xx'`, `'get', 'k'`,
			`'set', 'k2', 'v', 'xx'`, `'exists', 'k2'`, `'set', 'k', 'v', 'nx', 'xx'`, `'set', 'k', 'v', 'bogus'`,
			`'set', 'k', 'x', 'get'`, `'set', 'k2', 'y', 'get'`, `'set', 'k2', 'z', 'get', 'nx'`, `'get', 'k2'`,
			`'set', 'k', 'v', 'EX', 10`, `'ttl', 'k'`, `'set', 'k', 'v', 'keepttl'`, `'ttl', 'k'`, `'set', 'k', 'v'`, `'ttl', 'k'`,
			`'set', 'k', 'v', 'px', 1400`, `'ttl', 'k'`, `'set', 'k', 'v', 'ex', 0`, `'set', 'k', 'v', 'px', -1`,
			`'set', 'k', 'v', 'ex', '1.5'`, `'set', 'k', 'v', 'ex', '9223372036854775807'`, `'set', 'k', 'v', 'ex', 10, 'px', 100`,
			`'set', 'k', 'v', 'keepttl', 'ex', 10`, `'set', 'k', 'v', 'ex'`, `'set', 'k', 'v', 'ex', 5, 'ex', 10`, `'ttl', 'k'`,
			`'set', 'k', 'v', 'exat', 99999999999`, `'exists', 'k'`),
		cmd("set over other type", hash, k, `'set', 'h', 'v', 'get'`, `'set', 'h', 'v'`, `'type', 'h'`, `'get', 'h'`),
		cmd("set past exat", nil, k, `'set', 'k', 'v', 'pxat', 1`, `'exists', 'k'`),
		cmd("del exists", [][]any{{"set", "k", "1"}, {"set", "k2", "2"}}, k,
			`'exists', 'k', 'k', 'k2', 'nokey'`, `'del', 'k', 'nokey', 'k'`, `'exists', 'k'`, `'del'`, `'exists'`),
		cmd("incr family", [][]any{{"set", "s", "abc"}, {"set", "max", "9223372036854775807"}, {"set", "min", "-9223372036854775808"}, {"set", "sp", " 1"}}, []string{"k", "s", "max", "min", "sp", "h"},
			`'incr', 'k'`, `'incrby', 'k', 10`, `'decr', 'k'`, `'decrby', 'k', 3`, `'get', 'k'`,
			`'incr', 's'`, `'incr', 'max'`, `'decr', 'min'`, `'incrby', 'k', '1.5'`, `'incrby', 'k', '99999999999999999999'`,
			`'incrby', 'k', '+1'`, `'incrby', 'k', '01'`, `'incrby', 'k', '-0'`, `'decrby', 'k', '-9223372036854775808'`,
			`'incr', 'sp'`, `'incrby', 'k', -9223372036854775807`, `'incr', 'k', 'x'`),
		cmd("incr wrongtype", hash, k, `'incr', 'h'`, `'incrby', 'h', 'x'`),
		cmd("incr keeps ttl", [][]any{{"set", "k", "5", "ex", "100"}}, k, `'incr', 'k'`, `'ttl', 'k'`),
		cmd("expire family", [][]any{{"set", "k", "v"}, {"set", "k2", "v"}}, k,
			`'expire', 'k', 100`, `'ttl', 'k'`, `'expire', 'nokey', 100`, `'expire', 'k', 'abc'`,
			`'expire', 'k', 50, 'nx'`, `'expire', 'k', 50, 'xx'`, `'ttl', 'k'`, `'expire', 'k', 40, 'gt'`, `'expire', 'k', 60, 'gt'`, `'ttl', 'k'`,
			`'expire', 'k', 70, 'lt'`, `'expire', 'k', 30, 'lt'`, `'ttl', 'k'`, `'expire', 'k', 10, 'nx', 'xx'`, `'expire', 'k', 10, 'gt', 'lt'`,
			`'expire', 'k', 10, 'bogus'`, `'expire', 'k2', 10, 'gt'`, `'expire', 'k2', 10, 'lt'`, `'ttl', 'k2'`,
			`'expire', 'k', '99999999999999999'`, `'pexpire', 'k', '9223372036854775807'`, `'persist', 'k'`, `'persist', 'k'`, `'ttl', 'k'`,
			`'persist', 'nokey'`, `'ttl', 'nokey'`, `'pttl', 'nokey'`, `'expire', 'k2', -5`, `'exists', 'k2'`, `'pexpireat', 'k', 1`, `'exists', 'k'`,
			`'ttl'`, `'expire', 'k'`),
		cmd("expireat", [][]any{{"set", "k", "v"}}, k, `'expireat', 'k', 99999999999`, `'exists', 'k'`, `'pexpireat', 'k', 99999999999999`, `'exists', 'k'`),
		cmd("type", [][]any{{"set", "s", "v"}, {"hset", "h", "f", "v"}, {"zadd", "z", "1", "m"}}, k,
			`'type', 's'`, `'type', 'h'`, `'type', 'z'`, `'type', 'nokey'`),
		cmd("hash", hash, k,
			`'hget', 'h', 'a'`, `'hget', 'h', 'nofield'`, `'hget', 'nokey', 'a'`, `'hmget', 'h', 'a', 'nofield', 'b'`, `'hmget', 'nokey', 'a'`,
			`'hgetall', 'h'`, `'hgetall', 'nokey'`, `'hexists', 'h', 'a'`, `'hexists', 'h', 'z'`, `'hlen', 'h'`, `'hlen', 'nokey'`,
			`'hset', 'h', 'a', '10', 'd', '4'`, `'hgetall', 'h'`, `'hset', 'h', 'a'`, `'hset', 'h', 'a', '1', 'b'`,
			`'hincrby', 'h', 'a', 5`, `'hincrby', 'h', 'new', -3`, `'hincrby', 'h', 'c', 1`, `'hincrby', 'h', 'a', 'x'`,
			`'hincrby', 'h', 'a', '9223372036854775807'`, `'hdel', 'h', 'a', 'nofield', 'b'`, `'hgetall', 'h'`, `'hdel', 'h', 'c', 'd', 'new'`, `'exists', 'h'`,
			`'hdel', 'nokey', 'a'`, `'hget', 'h'`),
		cmd("hash wrongtype", str, k, `'hget', 's', 'a'`, `'hset', 's', 'a', '1'`, `'hgetall', 's'`, `'hdel', 's', 'a'`, `'hlen', 's'`, `'hmget', 's', 'a'`, `'hincrby', 's', 'a', 1`, `'hexists', 's', 'a'`),
		cmd("zadd", nil, k,
			`'zadd', 'z', 1, 'a', 2, 'b'`, `'zadd', 'z', 'nx', 5, 'a', 3, 'c'`, `'zadd', 'z', 'xx', 5, 'a', 4, 'd'`, `'zrange', 'z', 0, -1, 'withscores'`,
			`'zadd', 'z', 'ch', 5, 'a', 9, 'e', 2, 'b'`, `'zadd', 'z', 'gt', 'ch', 1, 'a', 10, 'b'`, `'zadd', 'z', 'lt', 'ch', 1, 'a', 20, 'b'`,
			`'zadd', 'z', 'incr', 2, 'a'`, `'zadd', 'z', 'incr', 'nx', 2, 'a'`, `'zadd', 'z', 'incr', 'xx', 2, 'new'`, `'zadd', 'z', 'incr', 'gt', -1, 'a'`,
			`'zrange', 'z', 0, -1, 'withscores'`, `'zadd', 'z', 'nx', 'xx', 1, 'm'`, `'zadd', 'z', 'gt', 'lt', 1, 'm'`, `'zadd', 'z', 'nx', 'gt', 1, 'm'`,
			`'zadd', 'z', 1`, `'zadd', 'z', 1, 'a', 2`, `'zadd', 'z', 'incr', 1, 'a', 2, 'b'`, `'zadd', 'z', 'abc', 'm'`, `'zadd', 'z', 'nan', 'm'`,
			`'zadd', 'z', '1e400', 'm'`, `'zadd', 'z', '1e-400', 'm'`, `'zadd', 'z', ' 1', 'm'`, `'zadd', 'z', '1 ', 'm'`, `'zadd', 'z', '', 'm'`,
			`'zadd', 'z', 'inf', 'pinf', '-inf', 'ninf', '+5', 'plus', '0x10', 'hex', '.5', 'dot', '5.', 'dot2', '1e3', 'exp', '-0', 'negzero'`,
			`'zrange', 'z', 0, -1, 'withscores'`, `'zadd', 'z', 'incr', '-inf', 'pinf'`, `'zadd', 'z', 'xx', 1, 'nokey'`, `'zadd', 'nokey', 'xx', 1, 'a'`, `'exists', 'nokey'`,
			`'zadd', 'nokey', 'xx', 'incr', 1, 'a'`),
		cmd("zset scores", nil, k,
			`'zadd', 'z', '0.1', 'a', '1e20', 'b', '123456789012345678', 'c', '1.5', 'd', '-2', 'e', '3', 'f'`,
			`'zrange', 'z', 0, -1, 'withscores'`, `'zscore', 'z', 'a'`, `'zscore', 'z', 'b'`, `'zscore', 'z', 'f'`, `'zscore', 'z', 'none'`, `'zscore', 'nokey', 'a'`),
		cmd("zset order ties", nil, k, `'zadd', 'z', 1, 'b', 1, 'a', 1, 'ab', 1, 'B', 0, 'z'`, `'zrange', 'z', 0, -1`),
		cmd("zrange by index", zset, k,
			`'zrange', 'z', 0, -1`, `'zrange', 'z', 1, 2`, `'zrange', 'z', -2, 100`, `'zrange', 'z', 3, 1`, `'zrange', 'z', 10, 20`, `'zrange', 'z', -100, 0`,
			`'zrange', 'z', 0, 1, 'rev'`, `'zrange', 'z', 0, -1, 'rev', 'withscores'`, `'zrange', 'z', 'x', 1`, `'zrange', 'z', '(1', 2`,
			`'zrange', 'z', 0, -1, 'limit', 0, 1`, `'zrange', 'z', 0, -1, 'limit', 0, -1`, `'zrange', 'z', 0, -1, 'limit', 0`, `'zrange', 'z', 0, -1, 'rev', 'rev'`,
			`'zrange', 'z', 0, -1, 'bogus'`, `'zrange', 'nokey', 0, -1`, `'zrange', 'z', 0`),
		cmd("zrange byscore", zset, k,
			`'zrange', 'z', '-inf', '+inf', 'byscore'`, `'zrange', 'z', '(1', '3', 'byscore', 'withscores'`, `'zrange', 'z', '(1', '(3', 'byscore'`,
			`'zrange', 'z', '+inf', '-inf', 'byscore', 'rev', 'limit', 0, 2, 'withscores'`, `'zrange', 'z', '3', '1', 'byscore', 'rev'`,
			`'zrange', 'z', '1', '3', 'byscore', 'rev'`, `'zrange', 'z', '-inf', '+inf', 'byscore', 'limit', 1, 2`,
			`'zrange', 'z', '-inf', '+inf', 'byscore', 'limit', 1, -1`, `'zrange', 'z', '-inf', '+inf', 'byscore', 'limit', -1, 5`,
			`'zrange', 'z', '-inf', '+inf', 'byscore', 'limit', 10, 5`, `'zrange', 'z', '-inf', '+inf', 'byscore', 'limit', 0, 0`,
			`'zrange', 'z', 'a', 'b', 'byscore'`, `'zrange', 'z', '(', '3', 'byscore'`, `'zrange', 'z', '', '2', 'byscore'`, `'zrange', 'z', ' 2', '3', 'byscore'`,
			`'zrange', 'z', '2', '2', 'byscore'`, `'zrange', 'z', '(2', '2', 'byscore'`, `'zrange', 'z', 'nan', '2', 'byscore'`, `'zrange', 'z', '-1e400', '1e400', 'byscore'`,
			`'zrange', 'z', 0, -1, 'bylex'`, `'zrange', 'z', 0, -1, 'byscore', 'byscore'`),
		cmd("zrangebyscore", zset, k,
			`'zrangebyscore', 'z', '-inf', '+inf'`, `'zrangebyscore', 'z', '(1', '+inf', 'withscores', 'limit', 0, 1`,
			`'zrangebyscore', 'z', '-inf', '+inf', 'limit', 1`, `'zrangebyscore', 'z', '-inf', '+inf', 'rev'`, `'zrangebyscore', 'z', '-inf', '+inf', 'byscore'`,
			`'zrangebyscore', 'z', 'x', '1'`, `'zrangebyscore', 'z', 2, 3, 'limit', 'a', 1`, `'zrangebyscore', 'nokey', 0, 1`),
		cmd("zcount zcard zrem", zset, k,
			`'zcard', 'z'`, `'zcard', 'nokey'`, `'zcount', 'z', '(1', '(3'`, `'zcount', 'z', '-inf', '+inf'`, `'zcount', 'z', 'x', '3'`, `'zcount', 'nokey', 0, 1`,
			`'zrem', 'z', 'a', 'nosuch', 'b'`, `'zrange', 'z', 0, -1`, `'zrem', 'z', 'c', 'd', 'e'`, `'exists', 'z'`, `'zrem', 'z'`),
		cmd("zremrange", zset, k,
			`'zremrangebyrank', 'z', 0, 0`, `'zrange', 'z', 0, -1`, `'zremrangebyscore', 'z', '(1', 3`, `'zrange', 'z', 0, -1`,
			`'zremrangebyrank', 'z', 5, 10`, `'zremrangebyrank', 'z', 'x', 1`, `'zremrangebyscore', 'z', 'x', 1`, `'zremrangebyscore', 'nokey', 0, 1`,
			`'zremrangebyrank', 'z', 0, -1`, `'exists', 'z'`),
		cmd("zset wrongtype", str, k, `'zadd', 's', 1, 'a'`, `'zrange', 's', 0, -1`, `'zcard', 's'`, `'zscore', 's', 'a'`, `'zrem', 's', 'a'`, `'zcount', 's', 0, 1`, `'zremrangebyscore', 's', 0, 1`, `'zrangebyscore', 's', 0, 1`),
		cmd("publish", nil, nil, `'publish', 'ch', 'msg'`, `'publish', 'ch'`),
		cmd("time arity", nil, nil, `'time', 'x'`),
	)
}

// conformanceTimeout bounds a conformance run on the harness: the cases are
// about what a script answers, and some (Redis's own smoke tests of 100,000
// elements) take seconds under the race detector on a busy machine.
const conformanceTimeout = 2 * time.Minute

// Every case runs once on Redis and twice on the harness: on a pooled Lua
// state and on a fresh one (FreshState); both must answer as Redis does.
func TestConformanceWithRedis(t *testing.T) {
	client := startRedis(t)
	conn := dialRESP(t, client.Options().Addr)
	ctx := context.Background()
	for _, tc := range conformanceCases {
		t.Run(tc.name, func(t *testing.T) {
			flush(t, client)
			for _, c := range tc.setup {
				if err := client.Do(ctx, c...).Err(); err != nil {
					t.Fatalf("setup %v on Redis: %v", c, err)
				}
			}
			sc, err := Load(tc.name+".lua", []byte(tc.src))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := normalize(conn.eval(tc.src, tc.keys, tc.args))
			if tc.samePlace {
				want = errorPlace(want)
			}
			for _, fresh := range []bool{false, true} {
				srv := NewServer(NewClock(time.Now()))
				srv.FreshState = fresh
				srv.ScriptTimeout = conformanceTimeout
				for _, c := range tc.setup {
					if _, err := srv.Do(c...); err != nil {
						t.Fatalf("setup %v on the harness: %v", c, err)
					}
				}
				res := srv.Run(sc, tc.keys, tc.args...)
				if _, ok := res.Err.(*ErrorReply); res.Err != nil && !ok {
					t.Fatalf("harness error (fresh state %v): %v", fresh, res.Err)
				}
				got := normalize(res.Typed, res.Err)
				if tc.samePlace {
					got = errorPlace(got)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("reply differs (fresh state %v)\nscript: %s\nharness: %#v\nredis:   %#v", fresh, tc.src, got, want)
				}
				compareKeyspaces(t, ctx, srv, client)
			}
		})
	}
}

// compareKeyspaces compares the harness's keyspace with the real server's.
func compareKeyspaces(t *testing.T, ctx context.Context, srv *Server, client *redis.Client) {
	t.Helper()
	real, err := RedisKeyspace(ctx, client, "*")
	if err != nil {
		t.Fatal(err)
	}
	if d := DiffKeyspaces(srv.Keyspace(), real, 2*time.Second); d != "" {
		t.Errorf("keyspace differs (-redis +harness):\n%s", d)
	}
}

// errorPlace keeps what must match when only the wording of an error differs:
// that it is an error, its code, its position and the script suffix.
func errorPlace(v any) any {
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, "(error) ") {
		return v
	}
	code, rest, _ := strings.Cut(strings.TrimPrefix(s, "(error) "), " ")
	pos, _, _ := strings.Cut(rest, " ")
	suffix := ""
	if i := strings.LastIndex(s, " script: "); i >= 0 {
		suffix = s[i:]
	}
	return "(error) " + code + " " + pos + " ..." + suffix
}

// Scripts Redis refuses to load get Redis's error from the Scripter (EVAL):
// shebang errors word for word, compile errors with the same prefix and line.
func TestConformanceLoadErrors(t *testing.T) {
	client := startRedis(t)
	conn := dialRESP(t, client.Options().Addr)
	ctx := context.Background()
	tests := []struct {
		src      string
		lineOnly bool // a Lua syntax error: gopher-lua words it differently
	}{
		{src: "#!not-lua\nreturn 1"},
		{src: "#!lua flags=what?\nreturn 1"},
		{src: "#!lua flags=no-writes,what?\nreturn 1"},
		{src: "#!lua flags=no-writes,,allow-oom\nreturn 1"},
		{src: "#!lua name=x\nreturn 1"},
		{src: "#!lua"},
		{src: "#! lua\nreturn 1"},
		{src: "#!luax\nreturn 1"},
		{src: "#!lua \"flags=no-writes\nreturn 1"},
		{src: "#!lua 'flags=no-writes'x\nreturn 1"},
		{src: "#!lua flags=\nreturn 1"},
		{src: "#!lua   flags=no-writes   flags=allow-oom  \nreturn 1"},
		{src: "#!lua \"flags=allow-stale\"\nreturn 1"},
		{src: "#!lua\nreturn (", lineOnly: true},
		{src: "return (", lineOnly: true},
		{src: "\n\nx = = 1", lineOnly: true},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			want := normalize(conn.eval(tc.src, nil, nil))
			got := normalize(NewServer(nil).Scripter().Eval(ctx, tc.src, nil).Result())
			if tc.lineOnly {
				want, got = compilePlace(want), compilePlace(got)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("harness: %#v\nredis:   %#v", got, want)
			}
		})
	}
}

// compilePlace keeps "ERR Error compiling script (new function): user_script:N:".
func compilePlace(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	if m := regexp.MustCompile(`^\(error\) ERR Error compiling script \(new function\): user_script:\d+:`).FindString(s); m != "" {
		return m
	}
	return v
}
