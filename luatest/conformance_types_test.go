package luatest

import (
	"fmt"
	"strings"
)

// Cases for the list, set, stream and multi-key string commands, and the
// refusals of commands the harness does not implement. Each runs its calls
// through redis.pcall, so errors are compared too. Replies that Redis orders
// by its hashing (members of a set kept as a hash table) are sorted by the
// script before they are compared; stream cases use explicit IDs, since "*"
// reads each server's own clock.
func init() {
	calls := func(name string, setup [][]any, keys []string, sorted bool, list ...string) confCase {
		var b strings.Builder
		b.WriteString("local out = {}\n")
		b.WriteString(`local function norm(r)
  if type(r) == 'table' and r.err == nil and r.ok == nil then
    local all = true
    for _, v in ipairs(r) do if type(v) ~= 'string' then all = false end end
    if all then table.sort(r) end
  end
  return r
end
`)
		for _, c := range list {
			if sorted {
				fmt.Fprintf(&b, "out[#out+1] = norm(redis.pcall(%s))\n", c)
			} else {
				fmt.Fprintf(&b, "out[#out+1] = redis.pcall(%s)\n", c)
			}
		}
		b.WriteString("return out\n")
		return confCase{name: name, setup: setup, src: b.String(), keys: keys}
	}
	k := []string{"l", "l2", "s", "s2", "s3", "d", "str", "h", "x", "x2", "k1", "k2", "k3"}
	list := [][]any{{"rpush", "l", "a", "b", "c", "b", "d", "b"}}
	str := [][]any{{"set", "str", "abc"}}
	sets := [][]any{{"sadd", "s", "a", "b", "c", "d"}, {"sadd", "s2", "c", "d", "e"}, {"sadd", "s3", "1", "2", "3", "10"}}
	stream := [][]any{
		{"xadd", "x", "1-1", "f", "v1"}, {"xadd", "x", "1-2", "f", "v2"}, {"xadd", "x", "2-0", "f", "v3", "g", "w"},
		{"xadd", "x", "3-5", "f", "v4"}, {"xadd", "x", "5-0", "f", "v5"},
	}
	group := append(append([][]any{}, stream...), []any{"xgroup", "create", "x", "g", "0"})
	conformanceCases = append(conformanceCases,
		// Lists.
		calls("list push pop", nil, k, false,
			`'lpush', 'l', 'a', 'b'`, `'rpush', 'l', 'c', 'd'`, `'lrange', 'l', 0, -1`, `'lpushx', 'nokey', 'a'`, `'rpushx', 'l', 'e'`,
			`'lpop', 'l'`, `'rpop', 'l'`, `'lpop', 'l', 2`, `'rpop', 'l', 0`, `'lpop', 'l', 10`, `'exists', 'l'`, `'lpop', 'l'`, `'lpop', 'l', 1`,
			`'rpush', 'l', 'x'`, `'lpop', 'l', -1`, `'lpop', 'l', 'abc'`, `'lpop', 'l', 1, 2`, `'rpop', 'nokey', 3`, `'llen', 'l'`, `'llen', 'nokey'`),
		calls("list index range", list, k, false,
			`'lindex', 'l', 0`, `'lindex', 'l', -1`, `'lindex', 'l', 6`, `'lindex', 'l', -7`, `'lindex', 'l', 'x'`, `'lindex', 'nokey', 0`,
			`'lrange', 'l', 1, 3`, `'lrange', 'l', -3, -1`, `'lrange', 'l', 4, 2`, `'lrange', 'l', -100, 100`, `'lrange', 'l', 10, 20`, `'lrange', 'l', 'a', 1`,
			`'lset', 'l', 1, 'B'`, `'lset', 'l', -1, 'Z'`, `'lset', 'l', 6, 'x'`, `'lset', 'nokey', 0, 'x'`, `'lset', 'l', 'x', 'y'`, `'lrange', 'l', 0, -1`),
		calls("list trim rem insert", list, k, false,
			`'lrem', 'l', 1, 'b'`, `'lrange', 'l', 0, -1`, `'lrem', 'l', -1, 'b'`, `'lrange', 'l', 0, -1`, `'lrem', 'l', 0, 'zz'`, `'lrem', 'l', 'x', 'b'`,
			`'linsert', 'l', 'before', 'c', 'C0'`, `'linsert', 'l', 'AFTER', 'c', 'C1'`, `'linsert', 'l', 'before', 'zz', 'q'`, `'linsert', 'nokey', 'before', 'a', 'b'`,
			`'linsert', 'l', 'middle', 'a', 'b'`, `'lrange', 'l', 0, -1`, `'ltrim', 'l', 1, -2`, `'lrange', 'l', 0, -1`, `'ltrim', 'l', 5, 1`, `'exists', 'l'`,
			`'ltrim', 'nokey', 0, 1`, `'rpush', 'l', 'a', 'a'`, `'lrem', 'l', 0, 'a'`, `'exists', 'l'`),
		calls("list lpos", [][]any{{"rpush", "l", "a", "b", "c", "1", "2", "3", "c", "c"}}, k, false,
			`'lpos', 'l', 'c'`, `'lpos', 'l', 'c', 'rank', 2`, `'lpos', 'l', 'c', 'rank', -1`, `'lpos', 'l', 'c', 'count', 0`, `'lpos', 'l', 'c', 'count', 2`,
			`'lpos', 'l', 'c', 'rank', -2, 'count', 0`, `'lpos', 'l', 'c', 'maxlen', 3`, `'lpos', 'l', 'c', 'maxlen', 2`, `'lpos', 'l', 'zz'`, `'lpos', 'l', 'zz', 'count', 1`,
			`'lpos', 'nokey', 'a'`, `'lpos', 'nokey', 'a', 'count', 0`, `'lpos', 'l', 'c', 'rank', 0`, `'lpos', 'l', 'c', 'count', -1`, `'lpos', 'l', 'c', 'maxlen', -1`,
			`'lpos', 'l', 'c', 'bogus'`, `'lpos', 'l', 'c', 'rank'`, `'lpos', 'l', 'c', 'count', 'x'`, `'lpos', 'l', 'c', 'rank', 'x'`, `'lpos', 'l', 'c', 'rank', 10`),
		calls("list move", list, k, false,
			`'lmove', 'l', 'l2', 'left', 'right'`, `'lmove', 'l', 'l2', 'RIGHT', 'LEFT'`, `'lrange', 'l2', 0, -1`, `'rpoplpush', 'l', 'l2'`, `'lrange', 'l', 0, -1`,
			`'lmove', 'l', 'l', 'left', 'right'`, `'lrange', 'l', 0, -1`, `'lmove', 'nokey', 'l2', 'left', 'left'`, `'exists', 'nokey'`, `'lmove', 'l', 'l2', 'up', 'left'`,
			`'lmove', 'l', 'str', 'left', 'left'`, `'rpoplpush', 'str', 'l'`, `'lmpop', 2, 'nokey', 'l', 'left'`, `'lmpop', 1, 'l', 'right', 'count', 10`, `'exists', 'l'`,
			`'lmpop', 1, 'l', 'left'`, `'lmpop', 0, 'l', 'left'`, `'lmpop', 2, 'l', 'left'`, `'lmpop', 1, 'l', 'middle'`, `'lmpop', 1, 'l2', 'left', 'count', 0`,
			`'lmpop', 1, 'l2', 'left', 'count', 1, 'count', 1`, `'blmpop', 0, 1, 'l2', 'left'`, `'blmpop', 0, 1, 'nokey', 'left'`, `'blmpop', -1, 1, 'l2', 'left'`),
		calls("list wrongtype", str, k, false,
			`'lpush', 'str', 'a'`, `'rpush', 'str', 'a'`, `'lrange', 'str', 0, -1`, `'llen', 'str'`, `'lpop', 'str'`, `'lindex', 'str', 0`, `'lset', 'str', 0, 'a'`,
			`'lrem', 'str', 0, 'a'`, `'ltrim', 'str', 0, 1`, `'linsert', 'str', 'before', 'a', 'b'`, `'lpos', 'str', 'a'`, `'lpushx', 'str', 'a'`),
		calls("list arity", nil, k, false, `'lpush', 'l'`, `'lrange', 'l', 0`, `'linsert', 'l', 'before', 'a'`, `'lpos', 'l'`, `'lmove', 'l', 'l2', 'left'`),
		calls("list keeps ttl", [][]any{{"rpush", "l", "a", "b"}, {"expire", "l", "100"}}, k, false, `'rpush', 'l', 'c'`, `'lpop', 'l'`, `'ttl', 'l'`),

		// Sets (hash-table sets sorted by the script).
		calls("set basics", sets, k, true,
			`'sadd', 's', 'a', 'x', 'x'`, `'srem', 's', 'x', 'nope'`, `'sismember', 's', 'a'`, `'sismember', 's', 'z'`, `'sismember', 'nokey', 'a'`,
			`'smismember', 's', 'a', 'z', 'b'`, `'smismember', 'nokey', 'a'`, `'scard', 's'`, `'scard', 'nokey'`, `'smembers', 's'`, `'smembers', 'nokey'`,
			`'srem', 's2', 'c', 'd', 'e'`, `'exists', 's2'`, `'srem', 'nokey', 'a'`),
		calls("set ops", sets, k, true,
			`'sinter', 's', 's2'`, `'sinter', 's', 'nokey'`, `'sunion', 's', 's2', 'nokey'`, `'sdiff', 's', 's2'`, `'sdiff', 'nokey', 's'`, `'sdiff', 's'`,
			`'sintercard', 2, 's', 's2'`, `'sintercard', 2, 's', 's2', 'limit', 1`, `'sintercard', 1, 's', 'limit', 0`, `'sintercard', 0, 's'`, `'sintercard', 3, 's', 's2'`,
			`'sintercard', 1, 's', 'limit', -1`, `'sintercard', 1, 's', 'bogus'`, `'sinterstore', 'd', 's', 's2'`, `'smembers', 'd'`, `'sunionstore', 'd', 's', 's2'`,
			`'scard', 'd'`, `'sdiffstore', 'd', 's', 's2'`, `'smembers', 'd'`, `'sinterstore', 'd', 's', 'nokey'`, `'exists', 'd'`, `'sunionstore', 'd', 'nokey'`,
			`'sinter', 's', 'str'`, `'sunion', 'str'`, `'sdiffstore', 'd', 'str', 's'`),
		calls("set intset order", sets, k, false,
			`'smembers', 's3'`, `'sadd', 's3', '-5', '7'`, `'smembers', 's3'`, `'sinter', 's3', 's3'`, `'sunion', 's3', 's3'`, `'sdiff', 's3', 'nokey'`,
			`'spop', 's3', 100`, `'exists', 's3'`, `'sadd', 's3', '5', '3', '-1'`, `'srandmember', 's3', 10`, `'srandmember', 's3', 0`),
		calls("set move", sets, k, true,
			`'smove', 's', 's2', 'a'`, `'smove', 's', 's2', 'a'`, `'smove', 's', 's', 'b'`, `'smove', 's', 's', 'zz'`, `'smove', 'nokey', 's2', 'a'`,
			`'smove', 's', 'str', 'b'`, `'smove', 'str', 's', 'b'`, `'smembers', 's'`, `'smembers', 's2'`, `'smove', 's2', 'new', 'e'`, `'smembers', 'new'`),
		calls("set pop one member", [][]any{{"sadd", "s", "only"}}, k, false,
			`'srandmember', 's'`, `'srandmember', 's', -3`, `'spop', 's'`, `'exists', 's'`, `'spop', 's'`, `'spop', 's', 2`, `'srandmember', 's'`,
			`'srandmember', 'nokey', 5`, `'spop', 's', -1`, `'spop', 's', 1, 2`, `'srandmember', 's', 'x'`),
		calls("set wrongtype", str, k, false,
			`'sadd', 'str', 'a'`, `'srem', 'str', 'a'`, `'smembers', 'str'`, `'scard', 'str'`, `'sismember', 'str', 'a'`, `'spop', 'str'`, `'srandmember', 'str'`, `'sinter', 'str'`),

		// Multi-key and other string commands.
		calls("mget mset", [][]any{{"set", "k1", "v1"}, {"rpush", "l", "x"}}, k, false,
			`'mget', 'k1', 'k2', 'l'`, `'mset', 'k1', 'a', 'k2', 'b'`, `'mget', 'k1', 'k2'`, `'mset', 'k1'`, `'mset', 'k1', 'a', 'k2'`,
			`'msetnx', 'k2', 'x', 'k3', 'y'`, `'exists', 'k3'`, `'msetnx', 'k3', 'x', 'str', 'y'`, `'mget', 'k3', 'str'`, `'mset', 'l', 'now a string'`, `'type', 'l'`),
		calls("mset drops ttl", [][]any{{"set", "k1", "v", "ex", "100"}}, k, false, `'mset', 'k1', 'w'`, `'ttl', 'k1'`),
		calls("string commands", [][]any{{"set", "str", "hello", "ex", "100"}, {"rpush", "l", "x"}}, k, false,
			`'append', 'str', ' world'`, `'ttl', 'str'`, `'append', 'k1', 'new'`, `'append', 'l', 'x'`, `'strlen', 'str'`, `'strlen', 'nokey'`, `'strlen', 'l'`,
			`'getrange', 'str', 0, 4`, `'getrange', 'str', -5, -1`, `'getrange', 'str', 5, 2`, `'getrange', 'str', -1, -5`, `'getrange', 'str', 0, 100`, `'getrange', 'nokey', 0, 1`,
			`'getrange', 'str', 'a', 1`, `'setrange', 'str', 6, 'WORLD'`, `'get', 'str'`, `'setrange', 'k2', 3, 'abc'`, `'get', 'k2'`, `'setrange', 'k3', 0, ''`, `'exists', 'k3'`,
			`'setrange', 'str', -1, 'x'`, `'setrange', 'l', 0, 'x'`, `'getset', 'str', 'new'`, `'ttl', 'str'`, `'getset', 'nokey2', 'v'`, `'getset', 'l', 'v'`,
			`'getdel', 'str'`, `'getdel', 'str'`, `'getdel', 'l'`, `'setnx', 'k1', 'x'`, `'setnx', 'k9', 'x'`, `'setex', 'k1', 100, 'v'`, `'ttl', 'k1'`,
			`'setex', 'k1', 0, 'v'`, `'setex', 'k1', 'x', 'v'`, `'psetex', 'k1', 1500, 'v'`, `'ttl', 'k1'`, `'psetex', 'k1', -1, 'v'`),
		calls("getex", [][]any{{"set", "k1", "v"}, {"set", "k2", "w", "ex", "100"}, {"rpush", "l", "x"}}, k, false,
			`'getex', 'k1'`, `'getex', 'k1', 'ex', 100`, `'ttl', 'k1'`, `'getex', 'k1', 'px', 50000`, `'ttl', 'k1'`, `'getex', 'k1', 'persist'`, `'ttl', 'k1'`,
			`'getex', 'k2', 'exat', 99999999999`, `'getex', 'k2', 'pxat', 1`, `'exists', 'k2'`, `'getex', 'nokey', 'ex', -5`, `'getex', 'k1', 'ex', 0`,
			`'getex', 'k1', 'ex', 'x'`, `'getex', 'k1', 'ex', 10, 'px', 10`, `'getex', 'k1', 'persist', 'ex', 10`, `'getex', 'k1', 'bogus'`, `'getex', 'l'`, `'getex', 'k1', 'ex'`),
		calls("generic commands", [][]any{{"set", "k1", "v", "ex", "100"}, {"set", "k2", "w"}, {"rpush", "l", "x"}}, k, false,
			`'touch', 'k1', 'k2', 'nokey'`, `'unlink', 'k2', 'nokey'`, `'exists', 'k2'`, `'rename', 'k1', 'k3'`, `'ttl', 'k3'`, `'exists', 'k1'`,
			`'rename', 'nokey', 'x'`, `'rename', 'k3', 'k3'`, `'renamenx', 'k3', 'l'`, `'renamenx', 'k3', 'k3'`, `'renamenx', 'k3', 'k1'`, `'get', 'k1'`, `'rename', 'l', 'k1'`,
			`'type', 'k1'`, `'expiretime', 'nokey'`, `'pexpiretime', 'k1'`, `'expireat', 'k1', 99999999999`, `'expiretime', 'k1'`, `'pexpiretime', 'k1'`),
		calls("hash commands", [][]any{{"hset", "h", "a", "1", "b", "22"}, {"set", "str", "x"}}, k, false,
			`'hsetnx', 'h', 'a', '9'`, `'hsetnx', 'h', 'c', '3'`, `'hsetnx', 'nokey', 'f', 'v'`, `'hmset', 'h', 'd', '4', 'e', '5'`, `'hmset', 'h', 'd'`,
			`'hkeys', 'h'`, `'hvals', 'h'`, `'hkeys', 'nokey'`, `'hstrlen', 'h', 'b'`, `'hstrlen', 'h', 'zz'`, `'hsetnx', 'str', 'a', 'b'`, `'hkeys', 'str'`, `'hstrlen', 'str', 'a'`),
		calls("zset commands", [][]any{{"zadd", "z", "1", "a", "2", "b", "3", "c"}, {"set", "str", "x"}}, append(k, "z"), false,
			`'zincrby', 'z', 5, 'a'`, `'zincrby', 'z', 1.5, 'new'`, `'zincrby', 'z', 'x', 'a'`, `'zrank', 'z', 'a'`, `'zrank', 'z', 'b'`, `'zrevrank', 'z', 'a'`,
			`'zrank', 'z', 'zz'`, `'zrank', 'nokey', 'a'`, `'zmscore', 'z', 'a', 'zz', 'new'`, `'zmscore', 'nokey', 'a'`, `'zincrby', 'str', 1, 'a'`, `'zrank', 'str', 'a'`),

		calls("zset legacy ranges", [][]any{{"zadd", "z", "1", "a", "2", "b", "3", "c", "3", "d", "0", "e"}, {"zadd", "zl", "0", "a", "0", "b", "0", "c", "0", "d"}, {"set", "str", "x"}}, append(k, "z", "zl"), false,
			`'zrevrange', 'z', 0, -1`, `'zrevrange', 'z', 0, 1, 'withscores'`, `'zrevrange', 'z', 0, -1, 'rev'`, `'zrevrange', 'z', 0, -1, 'limit', 0, 1`, `'zrevrange', 'z', 'a', 1`,
			`'zrevrangebyscore', 'z', '+inf', '-inf'`, `'zrevrangebyscore', 'z', 3, '(1', 'withscores', 'limit', 1, 2`, `'zrevrangebyscore', 'z', 1, 3`, `'zrevrangebyscore', 'z', 'x', 1`,
			`'zrevrangebyscore', 'z', 3, 1, 'byscore'`, `'zrangebylex', 'zl', '-', '+'`, `'zrangebylex', 'zl', '[b', '(d'`, `'zrangebylex', 'zl', '-', '+', 'limit', 1, 2`,
			`'zrangebylex', 'zl', 'b', 'c'`, `'zrangebylex', 'zl', '-', '+', 'withscores'`, `'zrevrangebylex', 'zl', '+', '-'`, `'zrevrangebylex', 'zl', '(d', '[b'`,
			`'zlexcount', 'zl', '-', '+'`, `'zlexcount', 'zl', '(a', '[c'`, `'zlexcount', 'zl', 'x', '+'`, `'zlexcount', 'nokey', '-', '+'`, `'zremrangebylex', 'zl', '[b', '[c'`,
			`'zrange', 'zl', 0, -1`, `'zremrangebylex', 'zl', '-', '+'`, `'exists', 'zl'`, `'zremrangebylex', 'zl', 'x', 'y'`, `'zpopmin', 'z'`, `'zpopmax', 'z', 2`,
			`'zpopmin', 'z', 0`, `'zpopmin', 'z', -1`, `'zpopmin', 'z', 1, 2`, `'zpopmax', 'z', 10`, `'exists', 'z'`, `'zpopmin', 'nokey'`, `'zpopmin', 'str'`,
			`'zlexcount', 'str', '-', '+'`, `'echo', 'hello'`),

		calls("sort", [][]any{{"rpush", "l", "3", "1", "10", "2", "2.5"}, {"rpush", "l2", "b", "a", "c"}, {"sadd", "s", "3", "1", "2"}, {"sadd", "s2", "x", "y", "z"},
			{"zadd", "z", "3", "a", "1", "b", "2", "c"}, {"set", "w_1", "30"}, {"set", "w_2", "20"}, {"set", "w_3", "10"}, {"hset", "h_1", "f", "c"}, {"hset", "h_2", "f", "b"},
			{"set", "str", "x"}}, append(k, "z", "w_1", "w_2", "w_3", "h_1", "h_2", "w_10", "h_3", "h_10", "w_2.5", "h_2.5"), false,
			`'sort', 'l'`, `'sort', 'l', 'desc'`, `'sort', 'l', 'limit', 1, 2`, `'sort', 'l', 'limit', -1, 2`, `'sort', 'l', 'limit', 10, 2`, `'sort', 'l2'`, `'sort', 'l2', 'alpha'`,
			`'sort', 'l2', 'alpha', 'desc', 'limit', 0, 2`, `'sort', 's'`, `'sort', 's2', 'alpha'`, `'sort', 's2', 'by', 'nosort'`, `'sort', 'z'`, `'sort', 'z', 'alpha'`,
			`'sort', 'z', 'by', 'nosort'`, `'sort', 'z', 'by', 'nosort', 'desc', 'limit', 1, 1`, `'sort', 'l', 'by', 'nosort', 'limit', 1, 2`, `'sort', 'l', 'by', 'w_*'`,
			`'sort', 'l', 'by', 'h_*->f', 'alpha'`, `'sort', 'l', 'get', '#', 'get', 'w_*', 'get', 'h_*->f'`, `'sort', 'l', 'by', 'nosort', 'get', 'w_*'`,
			`'sort', 'l', 'store', 'd'`, `'lrange', 'd', 0, -1`, `'sort', 'nokey', 'store', 'd'`, `'exists', 'd'`, `'sort', 'l', 'get', 'w_*', 'store', 'd'`, `'lrange', 'd', 0, -1`,
			`'sort_ro', 'l', 'desc'`, `'sort_ro', 'l', 'store', 'd'`, `'sort', 'str'`, `'sort', 'l', 'bogus'`, `'sort', 'l', 'limit', 'x', 1`, `'sort', 'nokey'`),
		calls("sort not numbers", [][]any{{"rpush", "l", "1", "x", "2"}, {"rpush", "l2", "1", "1e400"}}, k, false, `'sort', 'l'`, `'sort', 'l2'`, `'sort', 'l', 'alpha'`),

		// Streams.
		calls("stream xadd", nil, k, false,
			`'xadd', 'x', '1-1', 'f', 'v'`, `'xadd', 'x', '1-1', 'f', 'v'`, `'xadd', 'x', '1-0', 'f', 'v'`, `'xadd', 'x', '1-*', 'f', 'v'`, `'xadd', 'x', '2-*', 'f', 'v'`,
			`'xadd', 'x', '5', 'a', 'b', 'c', 'd'`, `'xadd', 'x', '0-0', 'f', 'v'`, `'xadd', 'x2', '0-0', 'f', 'v'`, `'xadd', 'x2', '0-*', 'f', 'v'`, `'xadd', 'x', 'bad', 'f', 'v'`,
			`'xadd', 'x', '9-1', 'f'`, `'xadd', 'x', '9-1'`, `'xadd', 'nokey', 'nomkstream', '1-1', 'f', 'v'`, `'exists', 'nokey'`, `'xadd', 'x', 'nomkstream', '9-1', 'f', 'v'`,
			`'xadd', 'x', '18446744073709551615-18446744073709551615', 'f', 'v'`, `'xadd', 'x', '18446744073709551615-*', 'f', 'v'`, `'xadd', 'str', '1-1', 'f', 'v'`,
			`'xadd', 'x', '+', 'f', 'v'`, `'xadd', 'x', '-', 'f', 'v'`, `'xadd', 'x', ' 5-1', 'f', 'v'`, `'xlen', 'x'`, `'xlen', 'nokey'`, `'xlen', 'str'`,
			`'xrange', 'x', '-', '+'`),
		calls("stream xadd trim", nil, k, false,
			`'xadd', 'x', 'maxlen', 2, '1-1', 'f', '1'`, `'xadd', 'x', 'maxlen', '=', 2, '2-1', 'f', '2'`, `'xadd', 'x', 'maxlen', 2, '3-1', 'f', '3'`, `'xrange', 'x', '-', '+'`,
			`'xadd', 'x', 'minid', '3', '4-1', 'f', '4'`, `'xrange', 'x', '-', '+'`, `'xadd', 'x', 'maxlen', '~', 1, '5-1', 'f', '5'`, `'xlen', 'x'`,
			`'xadd', 'x', 'minid', '~', '9', '6-1', 'f', '6'`, `'xlen', 'x'`, `'xadd', 'x', 'maxlen', -1, '7-1', 'f', '7'`, `'xadd', 'x', 'maxlen', 'x', '7-1', 'f', '7'`,
			`'xadd', 'x', 'maxlen', 1, 'minid', 1, '7-1', 'f', '7'`, `'xadd', 'x', 'limit', 5, '7-1', 'f', '7'`, `'xadd', 'x', 'maxlen', 1, 'limit', 5, '7-1', 'f', '7'`,
			`'xadd', 'x', 'maxlen', '~', 1, 'limit', 5, '7-1', 'f', '7'`, `'xadd', 'x', 'maxlen', '~', 1, 'limit', -1, '7-1', 'f', '7'`, `'xadd', 'x', 'minid', 'bad', '8-1', 'f', '8'`,
			`'xadd', 'x', 'maxlen', 0, '9-1', 'f', '9'`, `'xlen', 'x'`, `'exists', 'x'`, `'xrange', 'x', '-', '+'`),
		calls("stream range", stream, k, false,
			`'xrange', 'x', '-', '+'`, `'xrange', 'x', '1', '2'`, `'xrange', 'x', '(1-1', '(5-0'`, `'xrange', 'x', '-', '+', 'count', 2`, `'xrange', 'x', '-', '+', 'count', 0`,
			`'xrange', 'x', '-', '+', 'count', -1`, `'xrevrange', 'x', '+', '-'`, `'xrevrange', 'x', '3', '1-2', 'count', 1`, `'xrevrange', 'x', '(5-0', '(1-2'`,
			`'xrange', 'x', '5', '1'`, `'xrange', 'nokey', '-', '+'`, `'xrange', 'x', 'bad', '+'`, `'xrange', 'x', '(-', '+'`, `'xrange', 'x', '(18446744073709551615-18446744073709551615', '+'`,
			`'xrange', 'x', '-', '(0-0'`, `'xrange', 'x', '-', '+', 'bogus'`, `'xrange', 'x', '-', '+', 'count'`, `'xrange', 'str', '-', '+'`, `'xrange', 'x', '3-5', '3-5'`),
		calls("stream trim del", stream, k, false,
			`'xtrim', 'x', 'maxlen', 3`, `'xrange', 'x', '-', '+'`, `'xtrim', 'x', 'minid', '3-5'`, `'xrange', 'x', '-', '+'`, `'xtrim', 'x', 'maxlen', '~', 0`,
			`'xtrim', 'x'`, `'xtrim', 'x', 'bogus', 1`, `'xtrim', 'nokey', 'maxlen', 1`, `'xtrim', 'str', 'maxlen', 1`, `'xdel', 'x', '3-5', '9-9', '3-5'`,
			`'xlen', 'x'`, `'xdel', 'x', 'bad'`, `'xdel', 'nokey', '1-1'`, `'xadd', 'x', '1-1', 'f', 'v'`, `'xdel', 'x', '5-0'`, `'xlen', 'x'`, `'exists', 'x'`,
			`'xadd', 'x', '6-0', 'f', 'again'`, `'xrange', 'x', '-', '+'`),
		calls("stream groups", group, k, false,
			`'xgroup', 'create', 'x', 'g', '$'`, `'xgroup', 'create', 'x', 'g2', '$'`, `'xgroup', 'create', 'nokey', 'g', '$'`, `'xgroup', 'create', 'nokey', 'g', '$', 'mkstream'`,
			`'xlen', 'nokey'`, `'xgroup', 'create', 'x', 'g3', 'bad'`, `'xgroup', 'create', 'x', 'g3', '0', 'bogus'`, `'xgroup', 'create', 'x', 'g3', '0', 'entriesread', -5`,
			`'xgroup', 'create', 'x', 'g3', '0', 'entriesread', 2`, `'xgroup', 'setid', 'x', 'g2', '1-1'`, `'xgroup', 'setid', 'x', 'nog', '1-1'`, `'xgroup', 'setid', 'x', 'g2', '$', 'entriesread', 5`,
			`'xgroup', 'createconsumer', 'x', 'g', 'alice'`, `'xgroup', 'createconsumer', 'x', 'g', 'alice'`, `'xgroup', 'createconsumer', 'x', 'nog', 'bob'`,
			`'xgroup', 'delconsumer', 'x', 'g', 'alice'`, `'xgroup', 'delconsumer', 'x', 'g', 'nobody'`, `'xgroup', 'destroy', 'x', 'g3'`, `'xgroup', 'destroy', 'x', 'g3'`,
			`'xgroup', 'destroy', 'nokey2', 'g'`, `'xgroup', 'create', 'str', 'g', '$'`, `'xinfo', 'groups', 'x'`, `'xinfo', 'groups', 'nokey2'`, `'xinfo', 'groups', 'str'`,
			`'xgroup', 'setid', 'x', 'g', '0', 'entriesread'`),
		calls("stream readgroup", group, k, false,
			`'xreadgroup', 'group', 'g', 'alice', 'count', 2, 'streams', 'x', '>'`, `'xreadgroup', 'group', 'g', 'bob', 'streams', 'x', '>'`,
			`'xreadgroup', 'group', 'g', 'bob', 'streams', 'x', '>'`, `'xpending', 'x', 'g'`, `'xreadgroup', 'group', 'g', 'alice', 'streams', 'x', '0'`,
			`'xack', 'x', 'g', '1-1', '1-1', '9-9'`, `'xpending', 'x', 'g'`, `'xreadgroup', 'group', 'g', 'alice', 'streams', 'x', '0'`,
			`'xdel', 'x', '1-2'`, `'xreadgroup', 'group', 'g', 'alice', 'streams', 'x', '0'`, `'xack', 'x', 'nog', '1-1'`, `'xack', 'x', 'g', 'bad'`,
			`'xreadgroup', 'group', 'nog', 'alice', 'streams', 'x', '>'`, `'xreadgroup', 'group', 'g', 'alice', 'streams', 'nokey', '>'`,
			`'xreadgroup', 'group', 'g', 'alice', 'streams', 'x', '$'`, `'xreadgroup', 'group', 'g', 'alice', 'block', 0, 'streams', 'x', '>'`,
			`'xreadgroup', 'group', 'g', 'alice', 'streams', 'x'`, `'xreadgroup', 'streams', 'x', '>'`, `'xreadgroup', 'group', 'g', 'alice', 'noack', 'streams', 'x', '0'`,
			`'xinfo', 'groups', 'x'`, `'xinfo', 'consumers', 'x', 'nog'`),
		confCase{name: "stream consumers idle", setup: group, keys: k, src: `redis.call('xreadgroup', 'group', 'g', 'alice', 'count', 2, 'streams', 'x', '>')
redis.call('xgroup', 'createconsumer', 'x', 'g', 'bob')
local out = {}
for _, c in ipairs(redis.call('xinfo', 'consumers', 'x', 'g')) do
  out[#out+1] = {c[1], c[2], c[3], c[4], c[5], c[6] >= 0 and c[6] < 1000}
end
local pend = redis.call('xpending', 'x', 'g', '-', '+', 10)
for _, p in ipairs(pend) do p[3] = p[3] >= 0 and p[3] < 1000 end
out[#out+1] = pend
local idle = redis.call('xpending', 'x', 'g', 'idle', 100000, '-', '+', 10)
out[#out+1] = idle
out[#out+1] = redis.call('xpending', 'x', 'g', '-', '+', 10, 'nobody')
out[#out+1] = redis.pcall('xpending', 'x', 'g', '-', '+')
out[#out+1] = redis.pcall('xpending', 'x', 'g', 'idle', 'x', '-', '+', 10)
out[#out+1] = redis.pcall('xpending', 'x', 'nog')
return out`},
		confCase{name: "stream claim", setup: group, keys: k, src: `redis.call('xreadgroup', 'group', 'g', 'alice', 'streams', 'x', '>')
local out = {}
out[#out+1] = redis.call('xclaim', 'x', 'g', 'bob', 0, '1-1', '1-2', '9-9')
out[#out+1] = redis.call('xclaim', 'x', 'g', 'bob', 100000, '2-0')
out[#out+1] = redis.call('xclaim', 'x', 'g', 'carol', 0, '2-0', 'justid', 'retrycount', 7)
redis.call('xdel', 'x', '3-5')
out[#out+1] = redis.call('xclaim', 'x', 'g', 'carol', 0, '3-5', '5-0', 'force')
out[#out+1] = redis.pcall('xclaim', 'x', 'g', 'carol', 'x', '1-1')
out[#out+1] = redis.pcall('xclaim', 'x', 'g', 'carol', 0, '1-1', 'bogus')
out[#out+1] = redis.pcall('xclaim', 'x', 'nog', 'carol', 0, '1-1')
out[#out+1] = redis.call('xclaim', 'x', 'g', 'dave', 0, '1-1', 'lastid', '9-0', 'justid')
local pend = redis.call('xpending', 'x', 'g', '-', '+', 10)
for _, p in ipairs(pend) do p[3] = nil end
out[#out+1] = pend
out[#out+1] = redis.call('xinfo', 'groups', 'x')
return out`},
		confCase{name: "stream autoclaim", setup: group, keys: k, src: `redis.call('xreadgroup', 'group', 'g', 'alice', 'streams', 'x', '>')
redis.call('xdel', 'x', '1-2')
local out = {}
out[#out+1] = redis.call('xautoclaim', 'x', 'g', 'bob', 0, '0', 'count', 2)
out[#out+1] = redis.call('xautoclaim', 'x', 'g', 'bob', 0, '(2-0', 'justid')
out[#out+1] = redis.call('xautoclaim', 'x', 'g', 'carol', 100000, '-')
out[#out+1] = redis.pcall('xautoclaim', 'x', 'g', 'carol', 0, '-', 'count', 0)
out[#out+1] = redis.pcall('xautoclaim', 'x', 'g', 'carol', 'x', '-')
out[#out+1] = redis.pcall('xautoclaim', 'x', 'nog', 'carol', 0, '-')
out[#out+1] = redis.pcall('xautoclaim', 'x', 'g', 'carol', 0, 'bad')
local pend = redis.call('xpending', 'x', 'g', '-', '+', 10)
for _, p in ipairs(pend) do p[3] = nil end
out[#out+1] = pend
return out`},
		calls("stream read", stream, k, false,
			`'xread', 'streams', 'x', '0'`, `'xread', 'count', 2, 'streams', 'x', '1-2'`, `'xread', 'streams', 'x', 'nokey', '3-5', '0'`, `'xread', 'streams', 'x', '$'`,
			`'xread', 'streams', 'x', '5-0'`, `'xread', 'streams', 'x'`, `'xread', 'block', 0, 'streams', 'x', '0'`, `'xread', 'group', 'g', 'c', 'streams', 'x', '0'`,
			`'xread', 'streams', 'x', '>'`, `'xread', 'noack', 'streams', 'x', '0'`, `'xread', 'streams', 'x', 'bad'`, `'xread', 'count', 'x', 'streams', 'x', '0'`,
			`'xread', 'streams', 'str', '0'`, `'xread', 'bogus', 'streams', 'x', '0'`),
		calls("stream setid", stream, k, false,
			`'xsetid', 'x', '4-0'`, `'xsetid', 'x', '9-0', 'entriesadded', 3`, `'xsetid', 'x', '9-0', 'entriesadded', 10, 'maxdeletedid', '10-0'`,
			`'xsetid', 'x', '9-0', 'entriesadded', 10, 'maxdeletedid', '8-0'`, `'xsetid', 'nokey', '1-1'`, `'xsetid', 'x', 'bad'`, `'xsetid', 'x', '9-0', 'bogus'`,
			`'xadd', 'x', '9-0', 'f', 'v'`, `'xadd', 'x', '9-1', 'f', 'v'`),
		calls("stream wrongtype", str, k, false,
			`'xlen', 'str'`, `'xdel', 'str', '1-1'`, `'xack', 'str', 'g', '1-1'`, `'xpending', 'str', 'g'`, `'xclaim', 'str', 'g', 'c', 0, '1-1'`,
			`'xautoclaim', 'str', 'g', 'c', 0, '0'`, `'xreadgroup', 'group', 'g', 'c', 'streams', 'str', '>'`, `'xgroup', 'destroy', 'str', 'g'`, `'xsetid', 'str', '1-1'`),
		confCase{name: "stream approximate trim by nodes", keys: k, src: `for i = 1, 250 do redis.call('xadd', 'x', i .. '-1', 'field', i) end
local out = {}
out[#out+1] = redis.call('xtrim', 'x', 'maxlen', '~', 120)
out[#out+1] = redis.call('xlen', 'x')
out[#out+1] = redis.call('xtrim', 'x', 'maxlen', '~', 10, 'limit', 50)
out[#out+1] = redis.call('xtrim', 'x', 'minid', '~', '240')
out[#out+1] = redis.call('xlen', 'x')
out[#out+1] = redis.call('xtrim', 'x', 'maxlen', '=', 10)
out[#out+1] = redis.call('xrange', 'x', '-', '+', 'count', 2)
for i = 251, 300 do redis.call('xadd', 'x', i .. '-1', 'field', string.rep('v', 200)) end
out[#out+1] = redis.call('xtrim', 'x', 'maxlen', '~', 30)
out[#out+1] = redis.call('xlen', 'x')
return out`},
	)
}
