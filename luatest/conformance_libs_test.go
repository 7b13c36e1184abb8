package luatest

// Cases for the libraries Redis adds to Lua: cjson, cmsgpack, bit and struct.
// They run in TestConformanceWithRedis like every conformance case. A script
// that changes cjson's settings uses cjson.new() or restores them: on the real
// server they would outlive the script.
func init() {
	libCase := func(name, src string) confCase { return confCase{name: "lib " + name, src: src} }
	// each wraps expressions so that every value (errors included) becomes
	// one element of the reply: {ok, value-or-error}.
	each := func(name string, exprs ...string) confCase {
		src := "local out = {}\nlocal function try(f) local r = {pcall(f)} if r[1] then out[#out+1] = 'ok' for i = 2, #r do out[#out+1] = type(r[i]) == 'number' and tostring(r[i]) or r[i] end else out[#out+1] = 'error' out[#out+1] = r[2] end end\n"
		for _, e := range exprs {
			src += "try(function() return " + e + " end)\n"
		}
		src += "return out\n"
		return libCase(name, src)
	}
	conformanceCases = append(conformanceCases,
		// cjson: encoding.
		each("cjson encode scalars",
			`cjson.encode(1)`, `cjson.encode(-1.5)`, `cjson.encode(0.1)`, `cjson.encode(1/3)`, `cjson.encode(1e15)`, `cjson.encode(123456789012345678)`,
			`cjson.encode(1e-7)`, `cjson.encode(-0)`, `cjson.encode(2^53)`, `cjson.encode(100)`, `cjson.encode(1e100)`,
			`cjson.encode('a"b\\c/d')`, `cjson.encode('\0\1\8\9\10\12\13\31\127\128\255')`, `cjson.encode('é')`,
			`cjson.encode(true)`, `cjson.encode(false)`, `cjson.encode(nil)`, `cjson.encode(cjson.null)`),
		each("cjson encode tables",
			`cjson.encode({})`, `cjson.encode({1, 2, 3})`, `cjson.encode({1, 'a', true, false})`, `cjson.encode({1, nil, 3})`,
			`cjson.encode({[1] = 1, [3] = 3})`, `cjson.encode({[2] = 'x'})`, `cjson.encode({[10] = 1})`, `cjson.encode({[11] = 1})`,
			`cjson.encode({[1] = 1, [20] = 2})`, `cjson.encode({[0] = 1})`, `cjson.encode({[1.5] = 1})`, `cjson.encode({[-1] = 1})`,
			`cjson.encode({a = 1})`, `cjson.encode({a = {b = {c = {}}}})`, `cjson.encode({{}, {{}}, {1, {2}}})`, `cjson.encode({['a b'] = 'x\ny'})`,
			`cjson.encode({[1] = 'a', x = 'b'})`, `cjson.encode({[true] = 1})`, `cjson.encode({[1/0] = 1})`, `cjson.encode({{[{}] = 1}})`,
			`cjson.encode({cjson.null, cjson.null})`, `cjson.encode({[2.0] = 'two', [1] = 'one'})`),
		each("cjson encode errors",
			`cjson.encode(function() end)`, `cjson.encode({function() end})`, `cjson.encode(1/0)`, `cjson.encode(-1/0)`, `cjson.encode(0/0)`,
			`cjson.encode({1/0})`, `cjson.encode()`, `cjson.encode(1, 2)`, `cjson.encode(string)`, `cmsgpack.pack(math) ~= nil`),
		libCase("cjson encode self reference", "local t = {} t[1] = t return {pcall(cjson.encode, t)}"),
		libCase("cjson encode depth", "local t = {} local c = t for i = 1, 999 do c[1] = {} c = c[1] end local ok1 = cjson.encode(t) c[1] = {} return {#ok1, select(2, pcall(cjson.encode, t))}"),
		libCase("cjson encode error raised", "return cjson.encode(function() end)"),
		libCase("cjson encode error aliased", "local e = cjson.encode\nreturn e()"),
		// cjson: settings, on cjson.new() instances.
		each("cjson settings",
			`cjson.encode_keep_buffer()`, `cjson.encode_max_depth()`, `cjson.decode_max_depth()`, `cjson.encode_number_precision()`,
			`cjson.encode_invalid_numbers()`, `cjson.decode_invalid_numbers()`, `cjson.encode_sparse_array()`,
			`cjson.new().encode_max_depth(0)`, `cjson.new().encode_max_depth('x')`, `cjson.new().encode_number_precision(15)`,
			`cjson.new().encode_number_precision(3)`, `cjson.new().encode_keep_buffer('maybe')`, `cjson.new().encode_keep_buffer(1)`,
			`cjson.new().encode_keep_buffer('off')`, `cjson.new().encode_invalid_numbers('null')`, `cjson.new().encode_invalid_numbers(true)`,
			`cjson.new().encode_sparse_array(true, 0, 5)`, `cjson.new().encode_sparse_array(1, 2, 3, 4)`, `cjson.new().encode_sparse_array(nil, -1)`,
			`cjson.new().encode_max_depth(1, 2)`, `cjson._NAME`, `cjson._VERSION`, `type(cjson.new)`, `type(cjson.null)`, `tostring(cjson.null)`,
			`cjson.new().null == cjson.null`),
		libCase("cjson instance settings", `local j = cjson.new()
local out = {}
j.encode_number_precision(3) out[#out+1] = j.encode({1/3, 12345, 0.5})
j.encode_invalid_numbers('null') out[#out+1] = j.encode({1/0, 0/0})
j.encode_invalid_numbers(true) out[#out+1] = j.encode({1/0, -1/0, 0/0})
j.encode_max_depth(2) out[#out+1] = select(2, pcall(j.encode, {{{1}}}))
j.encode_sparse_array(true) out[#out+1] = j.encode({[1] = 1, [20] = 2})
j.encode_sparse_array(false, 0) out[#out+1] = j.encode({[1] = 1, [20] = 2})
j.decode_max_depth(2) out[#out+1] = select(2, pcall(j.decode, '[[[1]]]'))
j.decode_invalid_numbers(false) out[#out+1] = select(2, pcall(j.decode, '0x10'))
out[#out+1] = select(2, pcall(j.decode, 'Infinity'))
out[#out+1] = cjson.encode({1/3})
return out`),
		// cjson: decoding.
		each("cjson decode",
			`cjson.decode('1')`, `cjson.decode('-1.5e3')`, `cjson.decode('"a\\u00e9\\n\\/\\""')`, `cjson.decode('true')`, `cjson.decode('false')`,
			`cjson.decode('null') == cjson.null`, `#cjson.decode('[1,2,3]')`, `cjson.decode('[1,2,3]')[2]`, `cjson.decode('{"a":{"b":[1,{"c":"d"}]}}').a.b[2].c`,
			`cjson.decode('  [ 1 , 2 ]  ')[2]`, `cjson.decode('12345678901234567890')`, `cjson.decode('1e400')`, `cjson.decode('-0')`, `cjson.decode('0.1')`,
			`cjson.decode('"\\ud83d\\ude00"')`, `cjson.decode('0x10')`, `cjson.decode('+5')`, `cjson.decode('Infinity')`, `cjson.decode('-inf')`,
			`tostring(cjson.decode('nan'))`, `cjson.decode('007')`, `cjson.decode('[1]\0garbage')[1]`, `cjson.decode(42)`, `cjson.decode('{}') ~= nil`,
			`#cjson.decode('[]')`, `cjson.decode('[null,1]')[1] == cjson.null`, `cjson.decode('{"a":null}').a == cjson.null`, `cjson.decode('"\\u0000x"')`,
			`cjson.decode('1.5x')`),
		each("cjson decode errors",
			`cjson.decode('')`, `cjson.decode('[1,2')`, `cjson.decode('[1,,2]')`, `cjson.decode('{"a" 1}')`, `cjson.decode('{1:2}')`,
			`cjson.decode('{"a":1,}')`, `cjson.decode('[1] x')`, `cjson.decode('tru')`, `cjson.decode('nul')`, `cjson.decode('"abc')`,
			`cjson.decode('"\\x"')`, `cjson.decode('"\\u12"')`, `cjson.decode('"\\udc00"')`, `cjson.decode('"\\ud800\\u0041"')`, `cjson.decode('-')`,
			`cjson.decode('a\0')`, `cjson.decode('\0a')`, `cjson.decode()`, `cjson.decode({})`, `cjson.decode('[', 1)`, `cjson.decode(']')`,
			`cjson.decode('{"a":')`, `cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))`, `#cjson.encode(cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)))`,
			`cjson.decode('\1')`),
		libCase("cjson round trip", `local v = cjson.decode(cjson.encode({1, 'two', {3}, {x = 'y'}, true}))
return {v[1], v[2], v[3][1], v[4].x, tostring(v[5])}`),
		libCase("cjson decode error raised", "return cjson.decode('[1,')"),

		// cmsgpack.
		each("cmsgpack pack",
			`cmsgpack.pack(0)`, `cmsgpack.pack(127)`, `cmsgpack.pack(128)`, `cmsgpack.pack(255)`, `cmsgpack.pack(256)`, `cmsgpack.pack(65535)`,
			`cmsgpack.pack(65536)`, `cmsgpack.pack(4294967295)`, `cmsgpack.pack(4294967296)`, `cmsgpack.pack(-1)`, `cmsgpack.pack(-32)`, `cmsgpack.pack(-33)`,
			`cmsgpack.pack(-128)`, `cmsgpack.pack(-129)`, `cmsgpack.pack(-32768)`, `cmsgpack.pack(-32769)`, `cmsgpack.pack(-2147483648)`, `cmsgpack.pack(-2147483649)`,
			`cmsgpack.pack(2^63)`, `cmsgpack.pack(-2^63)`, `cmsgpack.pack(1.5)`, `cmsgpack.pack(0.1)`, `cmsgpack.pack(1/0)`, `cmsgpack.pack(0/0)`, `cmsgpack.pack(1e300)`,
			`cmsgpack.pack('')`, `cmsgpack.pack(string.rep('x', 31))`, `cmsgpack.pack(string.rep('x', 32))`, `#cmsgpack.pack(string.rep('x', 256))`, `#cmsgpack.pack(string.rep('x', 65536))`,
			`cmsgpack.pack(true)`, `cmsgpack.pack(false)`, `cmsgpack.pack(nil)`, `cmsgpack.pack(cjson.null)`, `cmsgpack.pack(function() end)`,
			`cmsgpack.pack({})`, `cmsgpack.pack({1, 2, 3})`, `cmsgpack.pack({a = 1})`, `cmsgpack.pack({1, nil, 3})`, `cmsgpack.pack({[2] = 1})`,
			`cmsgpack.pack({[1.5] = 1})`, `#cmsgpack.pack({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16})`, `cmsgpack.pack(1, 'a', {2})`, `cmsgpack.pack()`),
		libCase("cmsgpack nesting", "local t = {} t[1] = t return cmsgpack.pack(t)"),
		each("cmsgpack unpack",
			`cmsgpack.unpack(cmsgpack.pack(-33))`, `cmsgpack.unpack(cmsgpack.pack(4294967296))`, `cmsgpack.unpack(cmsgpack.pack(1.5))`,
			`cmsgpack.unpack(cmsgpack.pack(0.1))`, `cmsgpack.unpack(cmsgpack.pack('hello'))`, `tostring(cmsgpack.unpack(cmsgpack.pack(true)))`,
			`cmsgpack.unpack(cmsgpack.pack({1, 2, 3}))[3]`, `cmsgpack.unpack(cmsgpack.pack({a = {b = 'c'}})).a.b`, `cmsgpack.unpack(cmsgpack.pack(1, 2, 3))`,
			`cmsgpack.unpack('\207\255\255\255\255\255\255\255\255')`, `cmsgpack.unpack('\211\128\0\0\0\0\0\0\0')`, `cmsgpack.unpack('\202\63\192\0\0')`,
			`cmsgpack.unpack('\196\1a')`, `cmsgpack.unpack('\193')`, `cmsgpack.unpack('\212\1\1')`, `cmsgpack.unpack('\217\5ab')`, `cmsgpack.unpack('\146\1')`,
			`cmsgpack.unpack('\129\192\1')`, `cmsgpack.unpack('\147\1\192\3')[3]`, `cmsgpack.unpack('')`, `cmsgpack.unpack()`, `cmsgpack.unpack('\219\0\0\0\5abc')`,
			`cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))`, `cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 1)`, `cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)`,
			`cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 3)`, `cmsgpack.unpack_one(cmsgpack.pack(1), 5)`, `cmsgpack.unpack_one(cmsgpack.pack(1), -1)`,
			`cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)`, `cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 1)`, `cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 0)`,
			`cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), -1)`, `cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3))`, `cmsgpack._NAME`, `cmsgpack._VERSION`),
		libCase("cmsgpack round trip", `local v = cmsgpack.unpack(cmsgpack.pack({1, 'two', {3}, {x = 'y'}, true, 1.25}))
return {v[1], v[2], v[3][1], v[4].x, tostring(v[5]), tostring(v[6])}`),
		libCase("cmsgpack error raised", "return cmsgpack.unpack('\\146')"),

		// bit.
		each("bit",
			`bit.tobit(0xffffffff)`, `bit.tobit(2^32 + 5)`, `bit.tobit(-1)`, `bit.tobit(1.5)`, `bit.tobit(2.5)`, `bit.tobit(-2.5)`, `bit.tobit('10')`, `bit.tobit('0x10')`,
			`bit.tobit(2^52)`, `bit.tobit(2^53 + 1)`, `bit.bnot(0)`, `bit.bnot(5)`, `bit.band(0xff, 0x0f, 0x3)`, `bit.bor(1, 2, 4, 8)`, `bit.bxor(5, 3)`,
			`bit.band()`, `bit.band({})`, `bit.bor(1, 'x')`, `bit.band(1, 0)`, `bit.lshift(1, 31)`, `bit.lshift(1, 32)`, `bit.lshift(1, 33)`, `bit.rshift(-1, 28)`,
			`bit.arshift(-256, 4)`, `bit.arshift(256, 4)`, `bit.rol(0x12345678, 8)`, `bit.ror(0x12345678, 8)`, `bit.rol(1, 0)`, `bit.ror(1, 0)`, `bit.rol(1, 32)`,
			`bit.bswap(0x12345678)`, `bit.tohex(255)`, `bit.tohex(255, 2)`, `bit.tohex(255, -4)`, `bit.tohex(-1)`, `bit.tohex(0x12345678, 10)`, `bit.tohex(1, 0)`,
			`bit.tohex(1, nil)`, `bit.lshift()`, `bit.lshift(1)`, `bit.tobit(nil)`, `bit.tobit(0/0)`, `bit.tobit(1/0)`, `bit.tobit(1e20)`),
		libCase("bit error raised", "return bit.band(1, {})"),

		// struct.
		each("struct pack",
			`struct.pack('b', -1)`, `struct.pack('B', 255)`, `struct.pack('h', -2)`, `struct.pack('>h', -2)`, `struct.pack('H', 65535)`, `struct.pack('i', 1)`,
			`struct.pack('>i', 1)`, `struct.pack('I', 4294967295)`, `struct.pack('l', -1)`, `struct.pack('L', 2^53)`, `struct.pack('T', 7)`, `struct.pack('i3', 0x123456)`,
			`struct.pack('>i16', -1)`, `struct.pack('<i16', -1)`, `struct.pack('f', 1.5)`, `struct.pack('>d', 1.5)`, `struct.pack('d', 0.1)`, `struct.pack('c3', 'abcdef')`,
			`struct.pack('c0', 'abc')`, `struct.pack('s', 'ab')`, `struct.pack('x')`, `struct.pack('!4 b i', 1, 2)`, `struct.pack('!b d', 1, 2)`, `struct.pack('!3 i', 1)`,
			`struct.pack('i33', 1)`, `struct.pack('z')`, `struct.pack('i')`, `struct.pack('c5', 'ab')`, `struct.pack('b', 'x')`, `struct.pack()`, `struct.pack('i99999999999', 1)`,
			`struct.pack('B', 256)`, `struct.pack('b', 1.9)`, `struct.pack('b', -1.9)`, `struct.pack('>I', -1)`, `struct.pack('i', 2^40)`, `struct.pack('>', 1)`),
		each("struct unpack",
			`struct.unpack('b', '\255')`, `struct.unpack('B', '\255')`, `struct.unpack('>h', '\255\254')`, `struct.unpack('<H', '\255\254')`, `struct.unpack('i', '\1\0\0\0')`,
			`struct.unpack('>I', '\255\255\255\255')`, `struct.unpack('l', '\255\255\255\255\255\255\255\255')`, `struct.unpack('L', '\0\0\0\0\0\0\240\63')`,
			`struct.unpack('i3', '\86\52\18')`, `struct.unpack('>i16', string.rep('\255', 16))`, `struct.unpack('f', struct.pack('f', 1.5))`,
			`struct.unpack('>d', struct.pack('>d', 0.1))`, `struct.unpack('c3', 'abcdef')`, `struct.unpack('s', 'ab\0cd')`, `struct.unpack('bc0', '\3abcd')`,
			`struct.unpack('xb', '\1\2')`, `struct.unpack('!4 b i', '\1\0\0\0\2\0\0\0')`, `struct.unpack('i', '\1\2')`, `struct.unpack('s', 'ab')`,
			`struct.unpack('c0', 'ab')`, `struct.unpack('b', '\1\2\3', 2)`, `struct.unpack('b', '\1\2\3', 0)`, `struct.unpack('b', '\1\2\3', 4)`,
			`struct.unpack('b', '\1\2\3', -1)`, `struct.unpack('z', 'a')`, `struct.unpack('b')`, `struct.unpack()`, `struct.unpack('>b<h', '\1\2\0')`),
		each("struct size",
			`struct.size('b')`, `struct.size('i')`, `struct.size('!i b i')`, `struct.size('!8 b d')`, `struct.size('c10')`, `struct.size('i7')`, `struct.size('s')`,
			`struct.size('c0')`, `struct.size('z')`, `struct.size('?')`, `struct.size('>l<h')`, `struct.size()`, `struct.size('!5')`),
		libCase("struct error raised", "return struct.pack('i')"),

		// coroutine.
		libCase("coroutine resume yield", `local co = coroutine.create(function(a) local b = coroutine.yield(a+1) return b*2 end)
local r1 = {coroutine.resume(co, 1)} local s1 = coroutine.status(co)
local r2 = {coroutine.resume(co, 10)} local r3 = {coroutine.resume(co)}
return {tostring(r1[1]), r1[2], s1, tostring(r2[1]), r2[2], tostring(r3[1]), r3[2], coroutine.status(co)}`),
		libCase("coroutine yield many", `local co = coroutine.wrap(function(...) local n = select('#', ...) for i = 1, 3 do coroutine.yield(i, n) end return 'done' end)
local out = {} for i = 1, 4 do local a, b = co('x', 'y') out[#out+1] = tostring(a) .. ':' .. tostring(b) end return out`),
		libCase("coroutine wrap error", "local co = coroutine.wrap(function() error('boom') end)\nreturn co()"),
		libCase("coroutine wrap error table", "local co = coroutine.wrap(function() error({err='MY err'}) end)\nreturn co()"),
		libCase("coroutine wrap dead", "local f = coroutine.wrap(function() coroutine.yield(1) end) f() f()\nreturn f()"),
		libCase("coroutine resume error", "local co = coroutine.create(function() error('boom') end) return {coroutine.resume(co)}"),
		libCase("coroutine resume runtime error", "local co = coroutine.create(function() return 1 + {} end) local ok, e = coroutine.resume(co) return {tostring(ok), e}"),
		libCase("coroutine resume error table", "local co = coroutine.create(function() error({err='X y'}) end) local ok, e = coroutine.resume(co) return e"),
		libCase("coroutine resume running", "local co co = coroutine.create(function() return coroutine.resume(co) end) return {coroutine.resume(co)}"),
		libCase("coroutine resume normal", `local outer
local inner = coroutine.create(function() return coroutine.resume(outer) end)
outer = coroutine.create(function() return coroutine.resume(inner) end)
local r = {coroutine.resume(outer)} return {tostring(r[1]), tostring(r[2]), r[3]}`),
		libCase("coroutine status", `local co co = coroutine.create(function() local s = coroutine.status(co) coroutine.yield(s) end)
local _, s = coroutine.resume(co) return {coroutine.status(co), s, type(coroutine.running())}`),
		libCase("coroutine running inside", "local co = coroutine.create(function() return type(coroutine.running()) end) return {coroutine.resume(co)}"),
		libCase("coroutine yield outside", "return coroutine.yield(1)"),
		libCase("coroutine yield in pcall", "return {pcall(coroutine.yield, 1)}"),
		libCase("coroutine yield across pcall", "local co = coroutine.create(function() local ok, e = pcall(coroutine.yield, 1) return tostring(ok) .. ' ' .. e end) return {coroutine.resume(co)}"),
		confCase{name: "lib coroutine redis.call", keys: []string{"k"}, src: "local co = coroutine.create(function() redis.call('set', KEYS[1], 'v') coroutine.yield() return redis.call('get', KEYS[1]) end) coroutine.resume(co) return {coroutine.resume(co)}"},
		libCase("coroutine bad arguments", "return {pcall(coroutine.create, 1), pcall(coroutine.create, print ~= nil), pcall(coroutine.resume, 1), pcall(coroutine.status, {}), select(2, pcall(coroutine.create, tostring))}"),
		libCase("coroutine type", "return {type(coroutine.create(function() end)), type(coroutine.wrap(function() end))}"),
		libCase("coroutine lib", "local t = {} for k in pairs(coroutine) do t[#t+1] = k end table.sort(t) return t"),
		libCase("coroutine error in nested", `local inner = coroutine.wrap(function() error('deep') end)
local outer = coroutine.create(function() inner() end)
local ok, e = coroutine.resume(outer) return {tostring(ok), e}`),
	)
}
