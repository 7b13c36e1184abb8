package luascript

import "strings"

// Command is what the reading knows of a Redis command a script may call.
type Command struct {
	Write bool // it may change the keyspace (or publish)
	Keyed bool // its first argument is a key
}

// Commands are the commands scripts may call, by lower-case name. A command not
// here is refused when the script is loaded: add it with its flags, so that
// read-only checks, key checks and the derived ACL stay exact.
var Commands = map[string]Command{}

func init() {
	for _, c := range []struct {
		names        string
		write, keyed bool
	}{
		{"get strlen getrange exists ttl pttl expiretime pexpiretime type hget hmget hgetall hexists hlen hkeys hvals hstrlen " +
			"zcard zcount zscore zmscore zrange zrangebyscore zrevrange zrevrangebyscore zrangebylex zrank zrevrank " +
			"llen lrange lindex smembers scard sismember smismember srandmember mget xlen xrange xrevrange", false, true},
		{"set setnx setex psetex getset getdel getex append setrange incr incrby incrbyfloat decr decrby del unlink " +
			"expire pexpire expireat pexpireat persist hset hsetnx hmset hdel hincrby hincrbyfloat " +
			"zadd zincrby zrem zremrangebyscore zremrangebyrank zremrangebylex zpopmin zpopmax " +
			"lpush rpush lpop rpop lset lrem linsert ltrim sadd srem spop mset msetnx rename renamenx copy " +
			"xadd xtrim xdel", true, true},
		{"time ping echo", false, false},
		{"publish", true, false},
		// Never granted by the generated ACL; listed so the linter can name them.
		{"flushall flushdb swapdb", true, false},
		{"keys scan dbsize info select config debug shutdown monitor acl script client cluster eval evalsha function fcall", false, false},
	} {
		for _, n := range strings.Fields(c.names) {
			Commands[n] = Command{Write: c.write, Keyed: c.keyed}
		}
	}
}
