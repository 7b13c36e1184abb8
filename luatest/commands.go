package luatest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// reply is a Redis reply inside the harness, before it is converted for Lua or
// for the test: one of intReply, bulkReply, statusReply, errReply, arrayReply, nilReply.
type reply any

type (
	intReply    int64
	bulkReply   string
	statusReply string
	errReply    string // "CODE message", as Redis sends it without the leading '-'
	arrayReply  []reply
	nilReply    struct{}
)

const (
	errWrongType  = errReply("WRONGTYPE Operation against a key holding the wrong kind of value")
	errSyntax     = errReply("ERR syntax error")
	errNotInt     = errReply("ERR value is not an integer or out of range")
	errNotFloat   = errReply("ERR value is not a valid float")
	errMinMax     = errReply("ERR min or max is not a float")
	errOverflow   = errReply("ERR increment or decrement would overflow")
	errHashNotInt = errReply("ERR hash value is not an integer")
)

var okReply = statusReply("OK")

// cmdCtx is one command being executed.
type cmdCtx struct {
	s    *Server
	argv []string // argv[0] is the lower-cased command name
	now  int64    // Unix ms, fixed for the command (for a whole script in Redis too)
	run  *runState
	keys []string // the arguments that are keys
	name string   // the command's name as the caller spelled it
}

func (c *cmdCtx) lookup(key string) *object { return c.s.db.lookup(key, c.now) }

// lookupTyped is the value under key, nil when there is none; a value of
// another type than typ ("list", "hash", ...) ends the command with WRONGTYPE.
func (c *cmdCtx) lookupTyped(key, typ string) *object {
	o := c.lookup(key)
	if o != nil && o.typ != typ {
		check(errWrongType)
	}
	return o
}

// wrote records that key was modified.
func (c *cmdCtx) wrote(key string) {
	if c.run != nil {
		c.run.wrote(key)
	}
}

// setTTL records a deadline put on key.
func (c *cmdCtx) setTTL(key string, deadline int64) {
	if c.run != nil {
		c.run.ttl(key, time.Duration(deadline-c.now)*time.Millisecond)
	}
}

// builtins are the commands the harness implements, by the name Redis's
// command table gives them ("get", "xgroup|create"). Arity, flags and key
// positions come from that table (gen/rediscmd), not from here.
var builtins map[string]handler

func init() {
	builtins = map[string]handler{
		"get":              cmdGet,
		"set":              cmdSet,
		"del":              cmdDel,
		"exists":           cmdExists,
		"incr":             withArg(incrDecr, 1),
		"decr":             withArg(incrDecr, -1),
		"incrby":           cmdIncrBy,
		"decrby":           cmdDecrBy,
		"expire":           withArgs(expireGeneric, true, true),
		"pexpire":          withArgs(expireGeneric, true, false),
		"expireat":         withArgs(expireGeneric, false, true),
		"pexpireat":        withArgs(expireGeneric, false, false),
		"persist":          cmdPersist,
		"ttl":              withArg(ttlGeneric, false),
		"pttl":             withArg(ttlGeneric, true),
		"type":             cmdType,
		"hset":             cmdHSet,
		"hget":             memberReply("hash", hashField, nilReply{}),
		"hmget":            memberReplies("hash", hashField, nilReply{}),
		"hgetall":          cmdHGetAll,
		"hdel":             removeMembers("hash"),
		"hincrby":          cmdHIncrBy,
		"hexists":          memberReply("hash", hasMember, intReply(0)),
		"hlen":             lengthOf("hash"),
		"zadd":             cmdZAdd,
		"zrem":             removeMembers("zset"),
		"zcard":            lengthOf("zset"),
		"zcount":           zcount(byScore),
		"zscore":           memberReply("zset", zsetScore, nilReply{}),
		"zrange":           withArgs(zrangeVariant, -1, false),
		"zrangebyscore":    withArgs(zrangeVariant, byScore, false),
		"zremrangebyscore": zremrange(byScore),
		"zremrangebyrank":  zremrange(byRank),
		"time":             cmdTime,
		"publish":          cmdPublish,
		"ping":             cmdPing,
	}
	for _, more := range []map[string]handler{stringCommands, listCommands, setCommands, streamCommands} {
		for name, fn := range more {
			builtins[name] = fn
		}
	}
}

// unknownCommandError is the reply a client gets for an unknown command.
func unknownCommandError(argv []string) errReply {
	var args strings.Builder
	for _, a := range argv[1:] {
		if args.Len() >= 128 {
			break
		}
		a = truncate(a, 128-args.Len())
		fmt.Fprintf(&args, "'%s' ", a)
	}
	return errReply(fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", truncate(argv[0], 128), args.String()))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func arityError(name string) errReply {
	return errReply(fmt.Sprintf("ERR wrong number of arguments for '%s' command", name))
}

// lengthOf is LLEN, HLEN, SCARD, ZCARD, XLEN and STRLEN: the size of the
// value of type typ under argv[1], 0 when there is none.
func lengthOf(typ string) handler {
	return func(c *cmdCtx) reply {
		o := c.lookupTyped(c.argv[1], typ)
		if o == nil {
			return intReply(0)
		}
		return intReply(o.size())
	}
}

// memberLookup finds what a command answers for the field or member m of
// o, false when o has no m.
type memberLookup func(o *object, m string) (reply, bool)

// The lookups HGET and HMGET, ZSCORE and ZMSCORE, and HEXISTS, SISMEMBER
// and SMISMEMBER answer with.
var (
	hashField memberLookup = func(o *object, m string) (reply, bool) {
		v, ok := o.hash.get(m)
		return bulkReply(v), ok
	}
	zsetScore memberLookup = func(o *object, m string) (reply, bool) {
		s, ok := o.zset.score(m)
		return bulkReply(formatScore(s)), ok
	}
	hasMember memberLookup = func(o *object, m string) (reply, bool) {
		var ok bool
		if o.typ == "hash" {
			_, ok = o.hash.get(m)
		} else {
			ok = o.set.has(m)
		}
		return intReply(1), ok
	}
)

// answer is what find answers for m in o, missing when o is nil or has no m.
func (find memberLookup) answer(o *object, m string, missing reply) reply {
	if o != nil {
		if r, ok := find(o, m); ok {
			return r
		}
	}
	return missing
}

// memberReply is HGET, HEXISTS, SISMEMBER and ZSCORE: what find answers for
// the member argv[2] of the value of type typ under argv[1].
func memberReply(typ string, find memberLookup, missing reply) handler {
	return func(c *cmdCtx) reply {
		return find.answer(c.lookupTyped(c.argv[1], typ), c.argv[2], missing)
	}
}

// memberReplies is HMGET, SMISMEMBER and ZMSCORE: memberReply's answer for
// each of argv[2:].
func memberReplies(typ string, find memberLookup, missing reply) handler {
	return func(c *cmdCtx) reply {
		o := c.lookupTyped(c.argv[1], typ)
		out := make(arrayReply, 0, len(c.argv)-2)
		for _, m := range c.argv[2:] {
			out = append(out, find.answer(o, m, missing))
		}
		return out
	}
}

// removeMembers is HDEL, SREM and ZREM: it removes the fields or members
// argv[2:] from the value of type typ under argv[1] (deleting it when it is
// left empty) and answers how many there were.
func removeMembers(typ string) handler {
	return func(c *cmdCtx) reply {
		key := c.argv[1]
		o := c.lookupTyped(key, typ)
		if o == nil {
			return intReply(0)
		}
		n := 0
		for _, m := range c.argv[2:] {
			if o.removeMember(m) {
				n++
			}
		}
		if n > 0 {
			c.wrote(key)
			c.deleteIfEmpty(key, o)
		}
		return intReply(n)
	}
}

// ---- strings and generic keys ----

func cmdGet(c *cmdCtx) reply {
	o := c.lookup(c.argv[1])
	if o == nil {
		return nilReply{}
	}
	if o.typ != "string" {
		return errWrongType
	}
	return bulkReply(o.str)
}

const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
	setEX
	setPX
	setEXAT
	setPXAT
)

// setExpireOptions are SET's options that take a time, and their flags.
var setExpireOptions = map[string]int{"ex": setEX, "px": setPX, "exat": setEXAT, "pxat": setPXAT}

func cmdSet(c *cmdCtx) reply {
	key, val := c.argv[1], c.argv[2]
	flags := 0
	var expire string
	for j := 3; j < len(c.argv); j++ {
		opt := strings.ToLower(c.argv[j])
		hasNext := j+1 < len(c.argv)
		timeFlags := setKeepTTL | setEX | setPX | setEXAT | setPXAT
		switch {
		case opt == "nx" && flags&setXX == 0:
			flags |= setNX
		case opt == "xx" && flags&setNX == 0:
			flags |= setXX
		case opt == "get":
			flags |= setGet
		case opt == "keepttl" && flags&(timeFlags&^setKeepTTL) == 0:
			flags |= setKeepTTL
		case setExpireOptions[opt] != 0 && flags&(timeFlags&^setExpireOptions[opt]) == 0 && hasNext:
			flags |= setExpireOptions[opt]
			expire = c.argv[j+1]
			j++
		default:
			return errSyntax
		}
	}
	hasExpire := flags&(setEX|setPX|setEXAT|setPXAT) != 0
	var deadline int64
	if hasExpire {
		ms, ok := parseInt(expire)
		if !ok {
			return errNotInt
		}
		seconds := flags&(setEX|setEXAT) != 0
		if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
			return errReply("ERR invalid expire time in 'set' command")
		}
		if seconds {
			ms *= 1000
		}
		if flags&(setEX|setPX) != 0 {
			ms += c.now // wraps on overflow, as in C, and is caught below
		}
		if ms <= 0 {
			return errReply("ERR invalid expire time in 'set' command")
		}
		deadline = ms
	}
	old := c.lookup(key)
	var getReply reply = nilReply{}
	if flags&setGet != 0 && old != nil {
		if old.typ != "string" {
			return errWrongType
		}
		getReply = bulkReply(old.str)
	}
	if (flags&setNX != 0 && old != nil) || (flags&setXX != 0 && old == nil) {
		if flags&setGet != 0 {
			return getReply
		}
		return nilReply{}
	}
	o := &object{typ: "string", str: val}
	if flags&setKeepTTL != 0 && old != nil {
		o.hasExpire, o.expireAt = old.hasExpire, old.expireAt
	}
	if hasExpire {
		o.hasExpire, o.expireAt = true, deadline
		c.setTTL(key, deadline)
	}
	c.s.db.keys[key] = o
	c.wrote(key)
	if flags&setGet != 0 {
		return getReply
	}
	return okReply
}

func cmdDel(c *cmdCtx) reply {
	n := 0
	for _, k := range c.argv[1:] {
		if c.s.db.del(k, c.now) {
			n++
			c.wrote(k)
		}
	}
	return intReply(n)
}

func cmdExists(c *cmdCtx) reply {
	n := 0
	for _, k := range c.argv[1:] {
		if c.lookup(k) != nil {
			n++
		}
	}
	return intReply(n)
}

func incrDecr(c *cmdCtx, incr int64) reply {
	key := c.argv[1]
	o := c.lookup(key)
	var value int64
	if o != nil {
		if o.typ != "string" {
			return errWrongType
		}
		v, ok := parseInt(o.str)
		if !ok {
			return errNotInt
		}
		value = v
	}
	if (incr < 0 && value < 0 && incr < math.MinInt64-value) || (incr > 0 && value > 0 && incr > math.MaxInt64-value) {
		return errOverflow
	}
	value += incr
	if o == nil {
		o = &object{typ: "string"}
		c.s.db.keys[key] = o
	}
	o.str = strconv.FormatInt(value, 10)
	c.wrote(key)
	return intReply(value)
}

func cmdIncrBy(c *cmdCtx) reply {
	incr, ok := parseInt(c.argv[2])
	if !ok {
		return errNotInt
	}
	return incrDecr(c, incr)
}

func cmdDecrBy(c *cmdCtx) reply {
	incr, ok := parseInt(c.argv[2])
	if !ok {
		return errNotInt
	}
	if incr == math.MinInt64 {
		return errReply("ERR decrement would overflow")
	}
	return incrDecr(c, -incr)
}

// updateConditions are the NX, XX, GT and LT options of EXPIRE and ZADD.
type updateConditions struct{ nx, xx, gt, lt bool }

// parse sets the condition the lower-cased option opt names, false when it
// names none.
func (u *updateConditions) parse(opt string) bool {
	switch opt {
	case "nx":
		u.nx = true
	case "xx":
		u.xx = true
	case "gt":
		u.gt = true
	case "lt":
		u.lt = true
	default:
		return false
	}
	return true
}

// expireGeneric is EXPIRE, PEXPIRE (relative: from now), EXPIREAT and
// PEXPIREAT, in seconds or milliseconds.
func expireGeneric(c *cmdCtx, relative, seconds bool) reply {
	key, name := c.argv[1], c.argv[0]
	basetime := int64(0)
	if relative {
		basetime = c.now
	}
	var cond updateConditions
	for _, a := range c.argv[3:] {
		if !cond.parse(strings.ToLower(a)) {
			return errReply("ERR Unsupported option " + a)
		}
	}
	nx, xx, gt, lt := cond.nx, cond.xx, cond.gt, cond.lt
	if nx && (xx || gt || lt) {
		return errReply("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if gt && lt {
		return errReply("ERR GT and LT options at the same time are not compatible")
	}
	when, ok := parseInt(c.argv[2])
	if !ok {
		return errNotInt
	}
	invalid := errReply(fmt.Sprintf("ERR invalid expire time in '%s' command", name))
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return invalid
		}
		when *= 1000
	}
	if when > math.MaxInt64-basetime {
		return invalid
	}
	when += basetime
	o := c.lookup(key)
	if o == nil {
		return intReply(0)
	}
	if nx || xx || gt || lt {
		cur := int64(-1)
		if o.hasExpire {
			cur = o.expireAt
		}
		if nx && cur != -1 {
			return intReply(0)
		}
		if xx && cur == -1 {
			return intReply(0)
		}
		if gt && (when <= cur || cur == -1) {
			return intReply(0)
		}
		if lt && cur != -1 && when >= cur {
			return intReply(0)
		}
	}
	if when <= c.now {
		delete(c.s.db.keys, key)
		c.wrote(key)
		return intReply(1)
	}
	o.hasExpire, o.expireAt = true, when
	c.setTTL(key, when)
	c.wrote(key)
	return intReply(1)
}

func cmdPersist(c *cmdCtx) reply {
	o := c.lookup(c.argv[1])
	if o == nil || !o.hasExpire {
		return intReply(0)
	}
	o.hasExpire, o.expireAt = false, 0
	c.wrote(c.argv[1])
	return intReply(1)
}

func ttlGeneric(c *cmdCtx, ms bool) reply {
	o := c.lookup(c.argv[1])
	if o == nil {
		return intReply(-2)
	}
	if !o.hasExpire {
		return intReply(-1)
	}
	ttl := o.expireAt - c.now
	if ttl < 0 {
		ttl = 0
	}
	if ms {
		return intReply(ttl)
	}
	return intReply((ttl + 500) / 1000)
}

func cmdType(c *cmdCtx) reply {
	o := c.lookup(c.argv[1])
	if o == nil {
		return statusReply("none")
	}
	return statusReply(o.typ)
}

// ---- hashes ----

func cmdHSet(c *cmdCtx) reply {
	if len(c.argv)%2 == 1 {
		return arityError(c.argv[0])
	}
	key := c.argv[1]
	o := c.lookupTyped(key, "hash")
	if o == nil {
		o = &object{typ: "hash", hash: newHash()}
		c.s.db.keys[key] = o
	}
	n := 0
	for j := 2; j < len(c.argv); j += 2 {
		if o.hash.set(c.argv[j], c.argv[j+1]) {
			n++
		}
	}
	c.wrote(key)
	return intReply(n)
}

func cmdHGetAll(c *cmdCtx) reply {
	o := c.lookupTyped(c.argv[1], "hash")
	out := arrayReply{}
	if o != nil {
		for _, f := range o.hash.order {
			out = append(out, bulkReply(f), bulkReply(o.hash.fields[f]))
		}
	}
	return out
}

func cmdHIncrBy(c *cmdCtx) reply {
	key, field := c.argv[1], c.argv[2]
	incr, ok := parseInt(c.argv[3])
	if !ok {
		return errNotInt
	}
	o := c.lookupTyped(key, "hash")
	var value int64
	if o != nil {
		if v, ok := o.hash.get(field); ok {
			if value, ok = parseInt(v); !ok {
				return errHashNotInt
			}
		}
	}
	if (incr < 0 && value < 0 && incr < math.MinInt64-value) || (incr > 0 && value > 0 && incr > math.MaxInt64-value) {
		return errOverflow
	}
	value += incr
	if o == nil {
		o = &object{typ: "hash", hash: newHash()}
		c.s.db.keys[key] = o
	}
	o.hash.set(field, strconv.FormatInt(value, 10))
	c.wrote(key)
	return intReply(value)
}

// ---- server ----

func cmdTime(c *cmdCtx) reply {
	t := c.s.clock.Now()
	sec := t.Unix()
	usec := int64(t.Nanosecond() / 1000)
	return arrayReply{bulkReply(strconv.FormatInt(sec, 10)), bulkReply(strconv.FormatInt(usec, 10))}
}

func cmdPublish(c *cmdCtx) reply {
	if c.run != nil {
		c.run.res.Published = append(c.run.res.Published, Message{Channel: c.argv[1], Payload: c.argv[2]})
		if c.run.spec != nil {
			c.run.publishSpec(c.argv[1])
		}
	}
	return intReply(0)
}

func cmdPing(c *cmdCtx) reply {
	switch len(c.argv) {
	case 1:
		return statusReply("PONG")
	case 2:
		return bulkReply(c.argv[1])
	}
	return arityError(c.argv[0])
}
