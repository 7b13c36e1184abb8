// Package luatest runs the project's Redis Lua scripts the way Redis 7.0 runs them,
// without a Redis server, in well under a millisecond per run: tests of other
// packages load a script, set keys up with Server.Do, run the script with KEYS and
// ARGV against an in-memory keyspace whose TTLs follow a fake Clock, and check the
// reply, the commands the script sent, the keys it touched and wrote, the TTLs it
// set, and the project's rules (Result.Violations, Result.Check): every key a
// command names is passed in KEYS, every key written keeps a TTL, no SELECT.
//
// A Server is one logical Redis database. Load refuses what Redis would refuse to
// load (Lua 5.2 goto and labels, a bad shebang, syntax errors) with the file and
// line, as a *luascript.SyntaxError. Each Run uses a fresh gopher-lua state
// sandboxed like Redis 7.0.15: the base, table, string and math libraries only
// (no print, dofile, loadfile, getfenv, setfenv, os, io, debug, package,
// require); the global table and the library tables are read-only ("Attempt to
// modify a readonly table", which is also what creating a global gives in Redis
// 7.0) and reading an undefined global fails ("Script attempted to access
// nonexistent global variable 'x'"); pcall catches an error table as its err
// string; redis.call, pcall, error_reply, status_reply, sha1hex, log, setresp,
// set_repl, replicate_commands and the LOG_, REPL_ and version constants behave
// as in Redis 7.0.15. Replies convert both ways by Redis's rules (numbers passed
// to redis.call become "%.17g" text; a Lua number reply is truncated toward zero;
// arrays stop at the first nil) and reach the test as go-redis hands them to a
// RESP2 client. Error replies carry Redis 7.0.15's texts, including the
// " script: <sha1>, on @user_script:<line>." suffix of errors raised in a script
// and the script-side texts of redis.call ("ERR Unknown Redis command called from
// script", "ERR Wrong number of args calling Redis command from script"). A
// script with the no-writes shebang flag has its writes refused, as EVAL_RO
// and read-only scripts do. The tests compare all of this with a real
// redis-server 7.0.
//
// The commands are GET, SET (EX, PX, EXAT, PXAT, NX, XX, KEEPTTL, GET), DEL,
// EXISTS, INCR, INCRBY, DECR, DECRBY, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (NX,
// XX, GT, LT), PERSIST, TTL, PTTL, TYPE, HSET, HGET, HMGET, HGETALL, HDEL,
// HINCRBY, HEXISTS, HLEN, ZADD (NX, XX, GT, LT, CH, INCR), ZREM, ZCARD, ZCOUNT,
// ZSCORE, ZRANGE (by rank, BYSCORE, BYLEX, REV, LIMIT, WITHSCORES),
// ZRANGEBYSCORE, ZREMRANGEBYSCORE, ZREMRANGEBYRANK, TIME (from the Clock),
// PUBLISH (recorded in Result.Published; no subscribers) and PING, with Redis's
// arity, syntax, WRONGTYPE, overflow and range errors. Any other command is
// unknown; SELECT is refused.
//
// Expiry follows Redis to the millisecond: deadlines are Unix milliseconds and a
// key is gone once the clock is strictly past its deadline, so after
// SET k v PX 100 the key still exists (PTTL 0) when the clock has advanced
// exactly 100ms and is gone at 101ms. Time stands still during a run.
//
// # Known divergences from Redis 7.0
//
//   - Lua is gopher-lua, not PUC Lua 5.1. The global tostring is replaced so that
//     tostring(n) formats numbers with "%.14g" as Lua 5.1 does, but implicit
//     conversions keep gopher-lua's format: the concatenation 1e15 .. "" gives
//     "1000000000000000" here and "1e+15" in Redis, 1/3 .. "" gives 16 digits
//     instead of 14, and string.format("%s", n) likewise. Scripts must not rely
//     on concatenating numbers of 1e14 or more, or fractions; use tostring, or
//     pass numbers straight to redis.call (which formats them as Redis does).
//   - Arithmetic on strings converts them with gopher-lua's parser, which reads
//     a leading 0 as octal ("010" + 0 is 8 here, 10 in Redis) and accepts "_".
//     tonumber is replaced by Lua 5.1's; convert ARGV with tonumber first.
//   - Runtime error texts come from gopher-lua. The common ones (arithmetic on a
//     non-number, concatenating a non-string, indexing a non-table, comparing,
//     bad argument) are rewritten to Lua 5.1's wording, but without the variable
//     Lua 5.1 names ("attempt to index a nil value" where Lua says "attempt to
//     index field 'x' (a nil value)"); others ("attempt to call a non-function
//     object", "__len undefined") keep gopher-lua's text. Code, position and the
//     script suffix of the reply are as in Redis. Parse errors of loadstring
//     differ too.
//   - Missing: coroutine (Redis 7.0 has it; left out on purpose), bit, cjson,
//     cmsgpack and struct; using them fails with the nonexistent-global error.
//     Recursion deeper than about 1000 calls fails with "stack overflow" (Lua
//     5.1 allows about 20000).
//   - Read-only library tables are proxies: rawget, rawset, next, pairs and
//     setmetatable see through them, but getmetatable of _G or of a library
//     returns nil, and table.insert on a library table is not refused.
//   - math.random is Redis's rand48 generator, kept per Server and seeded with 0
//     when the Server is made; a real Redis seeds it at start-up, so sequences
//     match only after math.randomseed.
//   - Hashes reply in insertion order (Redis's order for small hashes; Redis
//     reorders hashes above 128 fields or 64-byte values). The elements of
//     {map=...} and {set=...} replies follow gopher-lua's table order.
//   - Replies are RESP2. A go-redis client on RESP3 (its default) gets a
//     script's {double=...}, {map=...} and {set=...} replies as float64 and maps.
//   - redis.setresp(3) is refused; redis.breakpoint and redis.debug do nothing;
//     redis.acl_check_cmd allows every known command.
//   - A script that raises an error table without an err field (error({}))
//     crashes Redis 7.0.15; here it is an error reply and a violation.
//   - A script is stopped after Server.ScriptTimeout (DefaultScriptTimeout when
//     zero) instead of blocking the server.
package luatest
