package luatest

import (
	"fmt"
	"math"
	"strings"
)

// More string, generic, hash and sorted-set commands, after Redis 7.0's
// t_string.c, db.c, expire.c, t_hash.c and t_zset.c.

var stringCommands = map[string]handler{
	"mget":             cmdMGet,
	"mset":             withArg(msetGeneric, false),
	"msetnx":           withArg(msetGeneric, true),
	"append":           cmdAppend,
	"strlen":           lengthOf("string"),
	"getset":           cmdGetSet,
	"getdel":           cmdGetDel,
	"getex":            cmdGetEx,
	"setnx":            cmdSetNX,
	"setex":            withArg(setexGeneric, true),
	"psetex":           withArg(setexGeneric, false),
	"getrange":         cmdGetRange,
	"setrange":         cmdSetRange,
	"unlink":           cmdDel,
	"touch":            cmdExists,
	"rename":           withArg(renameGeneric, false),
	"renamenx":         withArg(renameGeneric, true),
	"expiretime":       withArg(expiretimeGeneric, false),
	"pexpiretime":      withArg(expiretimeGeneric, true),
	"hsetnx":           cmdHSetNX,
	"hmset":            cmdHMSet,
	"hkeys":            withArgs(hashListGeneric, true, false),
	"hvals":            withArgs(hashListGeneric, false, true),
	"hstrlen":          cmdHStrlen,
	"zincrby":          cmdZIncrBy,
	"zrank":            withArg(zrankGeneric, false),
	"zrevrank":         withArg(zrankGeneric, true),
	"zmscore":          memberReplies("zset", zsetScore, nilReply{}),
	"zrevrange":        withArgs(zrangeVariant, byRank, true),
	"zrevrangebyscore": withArgs(zrangeVariant, byScore, true),
	"zrangebylex":      withArgs(zrangeVariant, byLex, false),
	"zrevrangebylex":   withArgs(zrangeVariant, byLex, true),
	"zlexcount":        zcount(byLex),
	"zremrangebylex":   zremrange(byLex),
	"zpopmin":          withArg(zpopGeneric, false),
	"zpopmax":          withArg(zpopGeneric, true),
	"echo":             func(c *cmdCtx) reply { return bulkReply(c.argv[1]) },
}

// protoMaxBulkLen is Redis's default proto-max-bulk-len: the longest string.
const protoMaxBulkLen = 512 * 1024 * 1024

// setString is setKey: the key becomes the string, without a TTL.
func setString(c *cmdCtx, key, val string) {
	c.s.db.keys[key] = &object{typ: "string", str: val}
	c.wrote(key)
}

func cmdMGet(c *cmdCtx) reply {
	out := make(arrayReply, 0, len(c.argv)-1)
	for _, k := range c.argv[1:] {
		if o := c.lookup(k); o != nil && o.typ == "string" {
			out = append(out, bulkReply(o.str))
		} else {
			out = append(out, nilReply{})
		}
	}
	return out
}

func msetGeneric(c *cmdCtx, nx bool) reply {
	if len(c.argv)%2 == 0 {
		return arityError(c.argv[0])
	}
	if nx {
		for j := 1; j < len(c.argv); j += 2 {
			if c.lookup(c.argv[j]) != nil {
				return intReply(0)
			}
		}
	}
	for j := 1; j < len(c.argv); j += 2 {
		setString(c, c.argv[j], c.argv[j+1])
	}
	if nx {
		return intReply(1)
	}
	return okReply
}

func cmdAppend(c *cmdCtx) reply {
	key := c.argv[1]
	o := c.lookupTyped(key, "string")
	if o == nil {
		setString(c, key, c.argv[2])
		return intReply(len(c.argv[2]))
	}
	if len(o.str)+len(c.argv[2]) > protoMaxBulkLen {
		return errReply("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	}
	o.str += c.argv[2]
	c.wrote(key)
	return intReply(len(o.str))
}

func cmdGetSet(c *cmdCtx) reply {
	key := c.argv[1]
	o := c.lookupTyped(key, "string")
	var old reply = nilReply{}
	if o != nil {
		old = bulkReply(o.str)
	}
	setString(c, key, c.argv[2])
	return old
}

func cmdGetDel(c *cmdCtx) reply {
	key := c.argv[1]
	o := c.lookupTyped(key, "string")
	if o == nil {
		return nilReply{}
	}
	delete(c.s.db.keys, key)
	c.wrote(key)
	return bulkReply(o.str)
}

func cmdGetEx(c *cmdCtx) reply {
	key := c.argv[1]
	var unitSeconds, absolute, persist, hasExpire bool
	var expire string
	for j := 2; j < len(c.argv); j++ {
		opt := strings.ToLower(c.argv[j])
		next := j+1 < len(c.argv)
		switch {
		case opt == "persist" && !hasExpire && !persist:
			persist = true
		case (opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") && !hasExpire && !persist && next:
			hasExpire = true
			unitSeconds = opt == "ex" || opt == "exat"
			absolute = opt == "exat" || opt == "pxat"
			expire = c.argv[j+1]
			j++
		default:
			return errSyntax
		}
	}
	o := c.lookupTyped(key, "string")
	if o == nil {
		return nilReply{}
	}
	val := bulkReply(o.str)
	switch {
	case hasExpire:
		when := must(expireMilliseconds(c, expire, unitSeconds, absolute))
		if absolute && when <= c.now {
			delete(c.s.db.keys, key)
		} else {
			o.hasExpire, o.expireAt = true, when
			c.setTTL(key, when)
		}
		c.wrote(key)
	case persist && o.hasExpire:
		o.hasExpire, o.expireAt = false, 0
		c.wrote(key)
	}
	return val
}

// expireMilliseconds is getExpireMillisecondsOrReply: an expire argument as
// an absolute deadline in Unix milliseconds.
func expireMilliseconds(c *cmdCtx, s string, seconds, absolute bool) (int64, reply) {
	ms, ok := parseInt(s)
	if !ok {
		return 0, errNotInt
	}
	invalid := errReply(fmt.Sprintf("ERR invalid expire time in '%s' command", c.argv[0]))
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		return 0, invalid
	}
	if seconds {
		ms *= 1000
	}
	if !absolute {
		ms += c.now // wraps on overflow, as in C, and is caught below
	}
	if ms <= 0 {
		return 0, invalid
	}
	return ms, nil
}

func cmdSetNX(c *cmdCtx) reply {
	if c.lookup(c.argv[1]) != nil {
		return intReply(0)
	}
	setString(c, c.argv[1], c.argv[2])
	return intReply(1)
}

func setexGeneric(c *cmdCtx, seconds bool) reply {
	key := c.argv[1]
	when := must(expireMilliseconds(c, c.argv[2], seconds, false))
	setString(c, key, c.argv[3])
	o := c.s.db.keys[key]
	o.hasExpire, o.expireAt = true, when
	c.setTTL(key, when)
	return okReply
}

func cmdGetRange(c *cmdCtx) reply {
	start := must(getLong(c.argv[2], ""))
	end := must(getLong(c.argv[3], ""))
	o := c.lookupTyped(c.argv[1], "string")
	if o == nil {
		return bulkReply("")
	}
	n := int64(len(o.str))
	if start < 0 && end < 0 && start > end {
		return bulkReply("")
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return bulkReply("")
	}
	return bulkReply(o.str[start : end+1])
}

func cmdSetRange(c *cmdCtx) reply {
	key, value := c.argv[1], c.argv[3]
	offset := must(getLong(c.argv[2], ""))
	if offset < 0 {
		return errReply("ERR offset is out of range")
	}
	o := c.lookupTyped(key, "string")
	if o == nil && value == "" {
		return intReply(0)
	}
	if o != nil && value == "" {
		return intReply(len(o.str))
	}
	if offset+int64(len(value)) > protoMaxBulkLen {
		return errReply("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	}
	if o == nil {
		o = &object{typ: "string"}
		c.s.db.keys[key] = o
	}
	b := []byte(o.str)
	if need := int(offset) + len(value); need > len(b) {
		b = append(b, make([]byte, need-len(b))...)
	}
	copy(b[offset:], value)
	o.str = string(b)
	c.wrote(key)
	return intReply(len(o.str))
}

func renameGeneric(c *cmdCtx, nx bool) reply {
	src, dst := c.argv[1], c.argv[2]
	o := c.lookup(src)
	if o == nil {
		return errNoSuchKey
	}
	if src == dst {
		if nx {
			return intReply(0)
		}
		return okReply
	}
	if c.lookup(dst) != nil {
		if nx {
			return intReply(0)
		}
		delete(c.s.db.keys, dst)
	}
	delete(c.s.db.keys, src)
	c.s.db.keys[dst] = o
	c.wrote(src)
	c.wrote(dst)
	if nx {
		return intReply(1)
	}
	return okReply
}

func expiretimeGeneric(c *cmdCtx, ms bool) reply {
	o := c.lookup(c.argv[1])
	switch {
	case o == nil:
		return intReply(-2)
	case !o.hasExpire:
		return intReply(-1)
	case ms:
		return intReply(o.expireAt)
	}
	return intReply((o.expireAt + 500) / 1000)
}

func cmdHSetNX(c *cmdCtx) reply {
	key := c.argv[1]
	o := c.lookupTyped(key, "hash")
	if o != nil {
		if _, ok := o.hash.get(c.argv[2]); ok {
			return intReply(0)
		}
	} else {
		o = &object{typ: "hash", hash: newHash()}
		c.s.db.keys[key] = o
	}
	o.hash.set(c.argv[2], c.argv[3])
	c.wrote(key)
	return intReply(1)
}

func cmdHMSet(c *cmdCtx) reply {
	r := cmdHSet(c)
	if _, ok := r.(intReply); ok {
		return okReply
	}
	return r
}

func hashListGeneric(c *cmdCtx, keys, vals bool) reply {
	o := c.lookupTyped(c.argv[1], "hash")
	out := arrayReply{}
	if o != nil {
		for _, f := range o.hash.order {
			if keys {
				out = append(out, bulkReply(f))
			}
			if vals {
				out = append(out, bulkReply(o.hash.fields[f]))
			}
		}
	}
	return out
}

func cmdHStrlen(c *cmdCtx) reply {
	o := c.lookupTyped(c.argv[1], "hash")
	if o != nil {
		if v, ok := o.hash.get(c.argv[2]); ok {
			return intReply(len(v))
		}
	}
	return intReply(0)
}

func cmdZIncrBy(c *cmdCtx) reply {
	inner := *c
	inner.argv = []string{"zadd", c.argv[1], "incr", c.argv[2], c.argv[3]}
	return cmdZAdd(&inner)
}

func zrankGeneric(c *cmdCtx, rev bool) reply {
	o := c.lookupTyped(c.argv[1], "zset")
	if o == nil {
		return nilReply{}
	}
	score, ok := o.zset.score(c.argv[2])
	if !ok {
		return nilReply{}
	}
	rank := o.zset.index(Member{Member: c.argv[2], Score: score})
	if rev {
		rank = o.zset.len() - 1 - rank
	}
	return intReply(rank)
}

func zpopGeneric(c *cmdCtx, maxEnd bool) reply {
	if len(c.argv) > 3 {
		return errSyntax
	}
	count := int64(-1)
	if len(c.argv) == 3 {
		count = must(getPositiveLong(c.argv[2], ""))
	}
	key := c.argv[1]
	o := c.lookupTyped(key, "zset")
	if o == nil || count == 0 {
		return arrayReply{}
	}
	if count == -1 {
		count = 1
	}
	out := arrayReply{}
	for i := int64(0); i < count && o.zset.len() > 0; i++ {
		m := o.zset.sorted[0]
		if maxEnd {
			m = o.zset.sorted[o.zset.len()-1]
		}
		o.zset.del(m.Member)
		out = append(out, bulkReply(m.Member), bulkReply(formatScore(m.Score)))
	}
	c.wrote(key)
	c.deleteIfEmpty(key, o)
	return out
}
