package luatest

import (
	"math"
	"strings"
)

// List commands, after Redis 7.0's t_list.c.

// listValue is a list, head first.
type listValue struct {
	items []string
}

var listCommands = map[string]handler{
	"lpush":     withArgs(pushGeneric, true, false),
	"rpush":     withArgs(pushGeneric, false, false),
	"lpushx":    withArgs(pushGeneric, true, true),
	"rpushx":    withArgs(pushGeneric, false, true),
	"linsert":   cmdLInsert,
	"llen":      lengthOf("list"),
	"lindex":    cmdLIndex,
	"lset":      cmdLSet,
	"lpop":      withArg(popGeneric, true),
	"rpop":      withArg(popGeneric, false),
	"lrange":    cmdLRange,
	"ltrim":     cmdLTrim,
	"lpos":      cmdLPos,
	"lrem":      cmdLRem,
	"lmove":     cmdLMove,
	"rpoplpush": withArgs(lmoveGeneric, false, true),
	"lmpop":     withArg(lmpopGeneric, 1),
	// A blocking command a script may call runs without blocking, as in Redis.
	"blmpop":  withArg(lmpopGeneric, 2),
	"sort":    withArg(sortGeneric, false),
	"sort_ro": withArg(sortGeneric, true),
}

var (
	errNoSuchKey  = errReply("ERR no such key")
	errOutOfRange = errReply("ERR index out of range")
)

func newList(c *cmdCtx, key string) *object {
	o := &object{typ: "list", list: &listValue{}}
	c.s.db.keys[key] = o
	return o
}

// deleteIfEmpty removes a list, set, hash or zset left without elements, as
// Redis does.
func (c *cmdCtx) deleteIfEmpty(key string, o *object) {
	if o.typ != "string" && o.typ != "stream" && o.size() == 0 && c.s.db.keys[key] == o {
		delete(c.s.db.keys, key)
	}
}

func pushGeneric(c *cmdCtx, head, xx bool) reply {
	key := c.argv[1]
	o := c.lookupTyped(key, "list")
	if o == nil {
		if xx {
			return intReply(0)
		}
		o = newList(c, key)
	}
	add := c.argv[2:]
	if head {
		// LPUSH a b c leaves c b a in front.
		items := make([]string, 0, len(add)+len(o.list.items))
		for i := len(add) - 1; i >= 0; i-- {
			items = append(items, add[i])
		}
		o.list.items = append(items, o.list.items...)
	} else {
		o.list.items = append(o.list.items, add...)
	}
	c.wrote(key)
	return intReply(len(o.list.items))
}

func cmdLInsert(c *cmdCtx) reply {
	var after bool
	switch strings.ToLower(c.argv[2]) {
	case "after":
		after = true
	case "before":
	default:
		return errSyntax
	}
	key := c.argv[1]
	o := c.lookupTyped(key, "list")
	if o == nil {
		return intReply(0)
	}
	for i, v := range o.list.items {
		if v == c.argv[3] {
			at := i
			if after {
				at++
			}
			items := o.list.items
			items = append(items, "")
			copy(items[at+1:], items[at:])
			items[at] = c.argv[4]
			o.list.items = items
			c.wrote(key)
			return intReply(len(items))
		}
	}
	return intReply(-1)
}

// listIndex converts a Redis list index (negative from the tail) into a slice
// index, ok false when it is out of range.
func listIndex(index int64, n int) (int, bool) {
	if index < 0 {
		index += int64(n)
	}
	if index < 0 || index >= int64(n) {
		return 0, false
	}
	return int(index), true
}

func cmdLIndex(c *cmdCtx) reply {
	o := c.lookupTyped(c.argv[1], "list")
	if o == nil {
		return nilReply{}
	}
	index := must(getLong(c.argv[2], ""))
	i, ok := listIndex(index, len(o.list.items))
	if !ok {
		return nilReply{}
	}
	return bulkReply(o.list.items[i])
}

func cmdLSet(c *cmdCtx) reply {
	key := c.argv[1]
	o := c.lookupTyped(key, "list")
	if o == nil {
		return errNoSuchKey
	}
	index := must(getLong(c.argv[2], ""))
	i, ok := listIndex(index, len(o.list.items))
	if !ok {
		return errOutOfRange
	}
	o.list.items[i] = c.argv[3]
	c.wrote(key)
	return okReply
}

// listRange is addListRangeReply's index arithmetic: the slice bounds of
// start..end (inclusive, negative from the tail), ok false when empty.
func listRange(start, end int64, n int) (int, int, bool) {
	from, last, ok := rankRange(start, end, n)
	return from, last + 1, ok
}

func bulkArray(items []string, reverse bool) arrayReply {
	out := make(arrayReply, len(items))
	for i, v := range items {
		if reverse {
			out[len(items)-1-i] = bulkReply(v)
		} else {
			out[i] = bulkReply(v)
		}
	}
	return out
}

// popRange removes up to count elements from one end, in pop order.
func popRange(o *object, head bool, count int64) []string {
	items := o.list.items
	n := int(min(count, int64(len(items))))
	var out []string
	if head {
		out = append(out, items[:n]...)
		o.list.items = items[n:]
	} else {
		for i := len(items) - 1; i >= len(items)-n; i-- {
			out = append(out, items[i])
		}
		o.list.items = items[:len(items)-n]
	}
	return out
}

func popGeneric(c *cmdCtx, head bool) reply {
	if len(c.argv) > 3 {
		return arityError(c.argv[0])
	}
	hasCount := len(c.argv) == 3
	var count int64
	if hasCount {
		count = must(getPositiveLong(c.argv[2], ""))
	}
	key := c.argv[1]
	o := c.lookupTyped(key, "list")
	if o == nil {
		return nilReply{}
	}
	if hasCount && count == 0 {
		return arrayReply{}
	}
	n := count
	if !hasCount {
		n = 1
	}
	popped := popRange(o, head, n)
	c.wrote(key)
	c.deleteIfEmpty(key, o)
	if !hasCount {
		return bulkReply(popped[0])
	}
	return bulkArray(popped, false)
}

func cmdLRange(c *cmdCtx) reply {
	start := must(getLong(c.argv[2], ""))
	end := must(getLong(c.argv[3], ""))
	o := c.lookupTyped(c.argv[1], "list")
	if o == nil {
		return arrayReply{}
	}
	from, to, ok := listRange(start, end, len(o.list.items))
	if !ok {
		return arrayReply{}
	}
	return bulkArray(o.list.items[from:to], false)
}

func cmdLTrim(c *cmdCtx) reply {
	start := must(getLong(c.argv[2], ""))
	end := must(getLong(c.argv[3], ""))
	key := c.argv[1]
	o := c.lookupTyped(key, "list")
	if o == nil {
		return okReply
	}
	from, to, ok := listRange(start, end, len(o.list.items))
	if !ok {
		o.list.items = nil
	} else {
		o.list.items = append([]string(nil), o.list.items[from:to]...)
	}
	c.wrote(key)
	c.deleteIfEmpty(key, o)
	return okReply
}

func cmdLPos(c *cmdCtx) reply {
	ele := c.argv[2]
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(c.argv); j++ {
		opt := strings.ToLower(c.argv[j])
		more := j < len(c.argv)-1
		switch {
		case opt == "rank" && more:
			j++
			rank = must(getLong(c.argv[j], ""))
			if rank == 0 {
				return errReply("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
			}
		case opt == "count" && more:
			j++
			count = must(getPositiveLong(c.argv[j], "COUNT can't be negative"))
		case opt == "maxlen" && more:
			j++
			maxlen = must(getPositiveLong(c.argv[j], "MAXLEN can't be negative"))
		default:
			return errSyntax
		}
	}
	fromTail := false
	if rank < 0 {
		if rank == math.MinInt64 {
			rank = math.MaxInt64 // -LONG_MIN wraps in C; no list has that many matches either way
		} else {
			rank = -rank
		}
		fromTail = true
	}
	o := c.lookup(c.argv[1])
	if o == nil {
		if count != -1 {
			return arrayReply{}
		}
		return nilReply{}
	}
	if o.typ != "list" {
		return errWrongType
	}
	items := o.list.items
	n := int64(len(items))
	var out arrayReply
	matches, matchIndex := int64(0), int64(-1)
	for index := int64(0); index < n && (maxlen == 0 || index < maxlen); index++ {
		pos := index
		if fromTail {
			pos = n - index - 1
		}
		if items[pos] == ele {
			matches++
			matchIndex = pos
			if matches >= rank {
				if count == -1 {
					return intReply(matchIndex)
				}
				out = append(out, intReply(matchIndex))
				if count != 0 && matches-rank+1 >= count {
					break
				}
			}
		}
		matchIndex = -1
	}
	if count != -1 {
		if out == nil {
			out = arrayReply{}
		}
		return out
	}
	return nilReply{}
}

func cmdLRem(c *cmdCtx) reply {
	toRemove := must(getLong(c.argv[2], ""))
	key := c.argv[1]
	o := c.lookupTyped(key, "list")
	if o == nil {
		return intReply(0)
	}
	fromTail := toRemove < 0
	if fromTail {
		toRemove = -toRemove
	}
	items := o.list.items
	removed := int64(0)
	keep := make([]bool, len(items))
	for i := range items {
		keep[i] = true
	}
	for k := 0; k < len(items); k++ {
		i := k
		if fromTail {
			i = len(items) - 1 - k
		}
		if items[i] == c.argv[3] {
			keep[i] = false
			removed++
			if toRemove != 0 && removed == toRemove {
				break
			}
		}
	}
	if removed > 0 {
		var rest []string
		for i, v := range items {
			if keep[i] {
				rest = append(rest, v)
			}
		}
		o.list.items = rest
		c.wrote(key)
	}
	c.deleteIfEmpty(key, o)
	return intReply(removed)
}

// listWhere parses LEFT or RIGHT (head true for LEFT).
func listWhere(s string) (head bool, errr reply) {
	switch strings.ToLower(s) {
	case "left":
		return true, nil
	case "right":
		return false, nil
	}
	return false, errSyntax
}

func cmdLMove(c *cmdCtx) reply {
	from := must(listWhere(c.argv[3]))
	to := must(listWhere(c.argv[4]))
	return lmoveGeneric(c, from, to)
}

func lmoveGeneric(c *cmdCtx, fromHead, toHead bool) reply {
	src, dst := c.argv[1], c.argv[2]
	so := c.lookupTyped(src, "list")
	if so == nil || len(so.list.items) == 0 {
		return nilReply{}
	}
	do := c.lookupTyped(dst, "list")
	v := popRange(so, fromHead, 1)[0]
	if do == nil {
		do = newList(c, dst)
	}
	if toHead {
		do.list.items = append([]string{v}, do.list.items...)
	} else {
		do.list.items = append(do.list.items, v)
	}
	c.wrote(dst)
	c.wrote(src)
	c.deleteIfEmpty(src, so)
	return bulkReply(v)
}

func lmpopGeneric(c *cmdCtx, numkeysIdx int) reply {
	numkeys := must(getRangeLong(c.argv[numkeysIdx], 1, math.MaxInt64, "numkeys should be greater than 0"))
	whereIdx := int64(numkeysIdx) + numkeys + 1
	if whereIdx >= int64(len(c.argv)) || whereIdx < 0 {
		return errSyntax
	}
	head := must(listWhere(c.argv[whereIdx]))
	count := int64(-1)
	for j := int(whereIdx) + 1; j < len(c.argv); j++ {
		if count == -1 && strings.EqualFold(c.argv[j], "count") && j < len(c.argv)-1 {
			j++
			count = must(getRangeLong(c.argv[j], 1, math.MaxInt64, "count should be greater than 0"))
			continue
		}
		return errSyntax
	}
	if count == -1 {
		count = 1
	}
	if numkeysIdx == 2 {
		// BLMPOP's timeout: parsed, never waited on in a script.
		check(checkTimeout(c.argv[1]))
	}
	for _, key := range c.argv[numkeysIdx+1 : whereIdx] {
		o := c.lookupTyped(key, "list")
		if o == nil || len(o.list.items) == 0 {
			continue
		}
		popped := popRange(o, head, count)
		c.wrote(key)
		c.deleteIfEmpty(key, o)
		return arrayReply{bulkReply(key), bulkArray(popped, false)}
	}
	return nilReply{}
}

// checkTimeout parses a blocking command's timeout in seconds as
// getTimeoutFromObjectOrReply does.
func checkTimeout(s string) reply {
	v, ok := parseFloat(s)
	if !ok {
		return errReply("ERR timeout is not a float or out of range")
	}
	if v < 0 {
		return errReply("ERR timeout is negative")
	}
	if v*1000 > math.MaxInt64/2 || math.IsInf(v, 0) {
		return errReply("ERR timeout is out of range")
	}
	return nil
}
