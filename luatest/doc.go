// Package luatest runs the project's Redis Lua scripts the way Redis 7.0 runs them,
// without a Redis server, in tens of microseconds per run: tests of other
// packages load a script, set keys up with Server.Do, run the script with KEYS and
// ARGV against an in-memory keyspace whose TTLs follow a fake Clock, and check the
// reply, the commands the script sent, the keys it touched and wrote, the TTLs it
// set, and the project's rules (Result.Violations, Result.Check): every key a
// command names is passed in KEYS, every key written keeps a TTL, no SELECT.
//
// A Server is one logical Redis database. Load refuses what Redis would refuse to
// load (Lua 5.2 goto and labels, a bad shebang with Redis's own text, syntax
// errors) with the file and line, as a *luascript.SyntaxError; a source is
// compiled once, whatever file name it is loaded under. Runs take sandboxed
// gopher-lua states from a pool shared by all Servers (FreshState builds one per
// run instead): everything a script can reach and that outlives it is
// read-only, as in Redis 7.0.15, and what a run may change (KEYS, ARGV, cjson's
// settings, chunk names) is reset before the next, so no run sees another's
// changes. The sandbox is Redis 7.0.15's: the base library without print,
// dofile, loadfile, getfenv, setfenv and newproxy, and the table, string, math,
// coroutine, cjson, cmsgpack, bit and struct libraries (the last four ported
// from Redis's own C sources); no os, io, debug, package or require. The
// global table, the library tables and the string metatable are read-only
// ("Attempt to modify a readonly table", which is also what creating a global
// gives), and reading an undefined global fails ("Script attempted to access
// nonexistent global variable 'x'"). redis.call, pcall, error_reply,
// status_reply, sha1hex, log, setresp, set_repl, replicate_commands,
// breakpoint, debug, acl_check_cmd and the LOG_, REPL_ and version constants
// behave as in Redis 7.0.15, and so does the global __redis__err__handler.
// Replies convert both ways by Redis's rules (numbers passed to redis.call
// become "%.17g" text; a Lua number reply is truncated toward zero; arrays stop
// at the first nil) and reach the test as go-redis hands them to a RESP2
// client (Result.Reply) and with their RESP types (Result.Typed: a status reply
// is a Status). Error replies carry Redis 7.0.15's texts, including the
// " script: <sha1>, on @user_script:<line>." suffix and the script-side
// refusals of redis.call ("ERR Unknown Redis command called from script",
// "ERR Wrong number of args calling Redis command from script", "ERR This
// Redis command is not allowed from script"). pcall and xpcall nest as deep as
// Redis lets them (198). A script with the no-writes shebang
// flag, or run by RunReadOnly (EVAL_RO), has its writes refused.
//
// What Redis knows about each command (arity, flags, key positions,
// subcommands) comes from gen/rediscmd, generated from Redis's COMMAND INFO and
// COMMAND DOCS. The harness implements the string, generic, hash, list, set,
// sorted-set and stream commands a script typically sends (strings: GET, SET
// with every option, GETEX, GETDEL, GETSET, MGET, MSET, MSETNX, SETNX, SETEX,
// PSETEX, APPEND, STRLEN, GETRANGE, SETRANGE, INCR, INCRBY, DECR, DECRBY; keys:
// DEL, UNLINK, EXISTS, TOUCH, TYPE, RENAME, RENAMENX, EXPIRE, PEXPIRE,
// EXPIREAT, PEXPIREAT, EXPIRETIME, PEXPIRETIME, PERSIST, TTL, PTTL, SORT,
// SORT_RO; hashes: HSET, HMSET, HSETNX, HGET, HMGET, HGETALL, HKEYS, HVALS,
// HDEL, HEXISTS, HLEN, HSTRLEN, HINCRBY; lists: LPUSH, RPUSH, LPUSHX, RPUSHX,
// LPOP, RPOP, LRANGE, LINDEX, LSET, LLEN, LREM, LTRIM, LINSERT, LPOS, LMOVE,
// RPOPLPUSH, LMPOP, BLMPOP; sets: SADD, SREM, SMOVE, SISMEMBER, SMISMEMBER,
// SMEMBERS, SCARD, SPOP, SRANDMEMBER, SINTER, SINTERCARD, SINTERSTORE, SUNION,
// SUNIONSTORE, SDIFF, SDIFFSTORE; sorted sets: ZADD, ZINCRBY, ZREM, ZCARD,
// ZCOUNT, ZLEXCOUNT, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZRANGE, ZRANGEBYSCORE,
// ZREVRANGE, ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX, ZREMRANGEBYRANK,
// ZREMRANGEBYSCORE, ZREMRANGEBYLEX, ZPOPMIN, ZPOPMAX; streams: XADD with
// MAXLEN/MINID = and ~ and LIMIT, XRANGE, XREVRANGE, XLEN, XTRIM, XDEL,
// XSETID, XREAD, XREADGROUP, XACK, XCLAIM, XAUTOCLAIM, XPENDING, XGROUP CREATE,
// SETID, DESTROY, CREATECONSUMER and DELCONSUMER, XINFO GROUPS and CONSUMERS;
// TIME from the Clock, PUBLISH recorded in Result.Published, PING, ECHO) with
// Redis's replies, arity, syntax, WRONGTYPE and TTL behaviour. Any other command
// Redis has is refused with "ERR luatest does not implement X" naming it, and
// Server.RegisterCommand adds one (see the example). SELECT is refused: a
// script must stay in the database its caller chose.
//
// Expiry follows Redis to the millisecond: deadlines are Unix milliseconds and a
// key is gone once the clock is strictly past its deadline, so after
// SET k v PX 100 the key still exists (PTTL 0) when the clock has advanced
// exactly 100ms and is gone at 101ms. Time stands still during a run; stream
// IDs for "*", delivery and idle times follow the Clock.
//
// The conformance tests run every case on a private redis-server 7.0.15 and on
// the harness and compare replies (with their RESP types) and the resulting
// keyspace: the cases of this package, the libraries, every command family and
// the Lua-semantics tests of Redis's own tests/unit/scripting.tcl, extracted by
// code into testdata/scripting_corpus.json.
//
// # Lua coverage
//
// With LUAGEN_COVER=DIR in the environment of go test (or SetCoverDir), every
// script Load compiles is compiled a second time with a counter before each
// statement and at the start of each arm of each if (an absent else counts as
// an arm), and each run adds what it counted to counters kept in
// memory-mapped files under DIR (format: luatest/coverprofile), complete
// however the test process ends. Replies, errors and their line numbers are
// the same with coverage as without. luagen cover --profile DIR reports the
// share of lines and branches of each script of a spec that ran (matched by
// the SHA1 of the source), writes them as HTML with hit counts, and checks the
// spec's coverage_floor per instance.
//
// # Known divergences from Redis 7.0
//
// What gopher-lua does its own way, each pinned by TestDivergencesArePinned or
// TestDivergenceLaxSyntax against a real server:
//   - Numbers that become strings implicitly keep gopher-lua's format: the
//     concatenation 1e15 .. "" gives "1000000000000000" here and "1e+15" in
//     Redis, 1/3 .. "" 16 digits instead of 14, string.format("%s", n)
//     likewise. tostring(n) and numbers passed to redis.call are formatted as
//     Redis formats them.
//   - Arithmetic on strings converts them with gopher-lua's parser, which reads
//     a leading 0 as octal ("010" + 0 is 8 here, 10 in Redis). tonumber and
//     unary minus are Lua 5.1's; convert ARGV with tonumber first.
//   - Runtime errors do not name the variable ("attempt to index a nil value"
//     where Lua 5.1 says "attempt to index local 't' (a nil value)"), library
//     argument errors say "got nil" for a missing argument where Lua 5.1 says
//     "got no value", and syntax errors (of scripts and of loadstring) are
//     gopher-lua's texts; the code, the line and the script suffix of the reply
//     are Redis's. gopher-lua's parser also accepts a few things Lua 5.1
//     refuses (the number 1e).
//   - pairs, next, cjson.encode, cmsgpack.pack and {map=...} replies walk a
//     table in the order its keys were added; Lua 5.1 walks its hash layout.
//     The length (#) of a table with holes may differ.
//   - string.dump gives Lua 5.1's header followed by gopher-lua's code (Redis
//     gives Lua 5.1 bytecode), with the coverage counters in it while coverage
//     is recorded; loadstring refuses both, as Redis does.
//   - Metamethods may call one another deeper than Lua 5.1's 200 C calls, and
//     Lua calls nest 3999 deep where Redis allows 19998 (gopher-lua's stack
//     overflow takes time quadratic in the depth).
//
// Where the harness differs on purpose or does not go:
//   - Replies are RESP2; redis.setresp(3) is refused.
//   - A Server starts where a new redis-server does: math.random's generator,
//     cjson's settings (which, unlike in Redis, a run cannot change for the
//     next one), an empty keyspace.
//   - Orders Redis derives from its randomly seeded hashing are replaced by
//     fixed ones: members of a set kept as a hash table (an intset's members
//     come in Redis's numeric order), fields of a hash, SPOP and SRANDMEMBER's
//     choices (from the Server's own seeded generator).
//   - redis.acl_check_cmd allows every command Redis knows: there are no ACL
//     users. XINFO STREAM, INCRBYFLOAT and HINCRBYFLOAT (long double
//     arithmetic), the bitmap, HyperLogLog and geo commands, among others, are
//     refused as not implemented.
//   - A script that raises an error table without an err field (error({}))
//     crashes Redis 7.0.15; here it is an error reply and a violation.
//   - A script is stopped after Server.ScriptTimeout (DefaultScriptTimeout when
//     zero) instead of blocking the server.
package luatest
