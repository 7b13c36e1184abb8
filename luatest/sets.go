package luatest

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Set commands, after Redis 7.0's t_set.c.
//
// Redis keeps a set of integers (at most set-max-intset-entries, 512) as an
// intset, which it walks in numeric order, and any other set as a hash table,
// which it walks in an order that depends on its hashing: replies list an
// intset's members in Redis's order and a hash table's sorted as strings.

// setMaxIntsetEntries is Redis's default set-max-intset-entries.
const setMaxIntsetEntries = 512

type setValue struct {
	members map[string]struct{}
	intset  bool // Redis would keep it as an intset (numeric order)
}

// newSetFor is setTypeCreate: an intset when the first member is an integer.
func newSetFor(first string) *setValue {
	_, isInt := parseInt(first)
	return &setValue{members: map[string]struct{}{}, intset: isInt}
}

// add is setTypeAdd: true when m is new. A member that is no integer, or one
// member too many, turns an intset into a hash table for good.
func (s *setValue) add(m string) bool {
	if _, ok := s.members[m]; ok {
		return false
	}
	if s.intset {
		if _, isInt := parseInt(m); !isInt {
			s.intset = false
		}
	}
	s.members[m] = struct{}{}
	if s.intset && len(s.members) > setMaxIntsetEntries {
		s.intset = false
	}
	return true
}

func (s *setValue) has(m string) bool {
	_, ok := s.members[m]
	return ok
}

// ordered lists the members in the order the harness replies with them.
func (s *setValue) ordered() []string {
	out := make([]string, 0, len(s.members))
	for m := range s.members {
		out = append(out, m)
	}
	if s.intset {
		sort.Slice(out, func(i, j int) bool {
			a, _ := strconv.ParseInt(out[i], 10, 64)
			b, _ := strconv.ParseInt(out[j], 10, 64)
			return a < b
		})
	} else {
		sort.Strings(out)
	}
	return out
}

func (s *setValue) sortedStrings() []string {
	out := make([]string, 0, len(s.members))
	for m := range s.members {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

var setCommands = map[string]handler{
	"sadd":        cmdSAdd,
	"srem":        removeMembers("set"),
	"smove":       cmdSMove,
	"sismember":   memberReply("set", hasMember, intReply(0)),
	"smismember":  memberReplies("set", hasMember, intReply(0)),
	"scard":       lengthOf("set"),
	"smembers":    cmdSMembers,
	"spop":        cmdSPop,
	"srandmember": cmdSRandMember,
	"sinter":      func(c *cmdCtx) reply { return sinterGeneric(c, c.argv[1:], "", false, 0) },
	"sintercard":  cmdSInterCard,
	"sinterstore": func(c *cmdCtx) reply { return sinterGeneric(c, c.argv[2:], c.argv[1], false, 0) },
	"sunion":      func(c *cmdCtx) reply { return setOpGeneric(c, c.argv[1:], "", opUnion) },
	"sunionstore": func(c *cmdCtx) reply { return setOpGeneric(c, c.argv[2:], c.argv[1], opUnion) },
	"sdiff":       func(c *cmdCtx) reply { return setOpGeneric(c, c.argv[1:], "", opDiff) },
	"sdiffstore":  func(c *cmdCtx) reply { return setOpGeneric(c, c.argv[2:], c.argv[1], opDiff) },
}

func cmdSAdd(c *cmdCtx) reply {
	key := c.argv[1]
	o := c.lookupTyped(key, "set")
	if o == nil {
		o = &object{typ: "set", set: newSetFor(c.argv[2])}
		c.s.db.keys[key] = o
	}
	added := 0
	for _, m := range c.argv[2:] {
		if o.set.add(m) {
			added++
		}
	}
	if added > 0 {
		c.wrote(key)
	}
	return intReply(added)
}

func cmdSMove(c *cmdCtx) reply {
	src, dst, m := c.argv[1], c.argv[2], c.argv[3]
	so := c.lookup(src)
	do := c.lookup(dst)
	if so == nil {
		return intReply(0)
	}
	if so.typ != "set" || (do != nil && do.typ != "set") {
		return errWrongType
	}
	if so == do {
		if so.set.has(m) {
			return intReply(1)
		}
		return intReply(0)
	}
	if !so.set.has(m) {
		return intReply(0)
	}
	delete(so.set.members, m)
	c.wrote(src)
	c.deleteIfEmpty(src, so)
	if do == nil {
		do = &object{typ: "set", set: newSetFor(m)}
		c.s.db.keys[dst] = do
	}
	if do.set.add(m) {
		c.wrote(dst)
	}
	return intReply(1)
}

func cmdSMembers(c *cmdCtx) reply {
	o := c.lookupTyped(c.argv[1], "set")
	if o == nil {
		return arrayReply{}
	}
	return bulkArray(o.set.ordered(), false)
}

// random is the Server's generator for SPOP and SRANDMEMBER (Redis's own
// random() cannot be reproduced): seeded the same for every new Server.
func (s *Server) random() *rand.Rand {
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(0, 0))
	}
	return s.rng
}

func cmdSPop(c *cmdCtx) reply {
	if len(c.argv) > 3 {
		return errSyntax
	}
	key := c.argv[1]
	if len(c.argv) == 3 {
		count := must(getPositiveLong(c.argv[2], ""))
		o := c.lookupTyped(key, "set")
		if o == nil || count == 0 {
			return arrayReply{}
		}
		members := o.set.ordered()
		if count >= int64(len(members)) {
			delete(c.s.db.keys, key)
			c.wrote(key)
			return bulkArray(members, false)
		}
		c.s.random().Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		popped := members[:count]
		for _, m := range popped {
			delete(o.set.members, m)
		}
		c.wrote(key)
		return bulkArray(popped, false)
	}
	o := c.lookupTyped(key, "set")
	if o == nil {
		return nilReply{}
	}
	members := o.set.ordered()
	m := members[c.s.random().IntN(len(members))]
	delete(o.set.members, m)
	c.wrote(key)
	c.deleteIfEmpty(key, o)
	return bulkReply(m)
}

func cmdSRandMember(c *cmdCtx) reply {
	if len(c.argv) > 3 {
		return errSyntax
	}
	if len(c.argv) == 3 {
		l := must(getRangeLong(c.argv[2], -math.MaxInt64, math.MaxInt64, ""))
		o := c.lookupTyped(c.argv[1], "set")
		if o == nil || l == 0 {
			return arrayReply{}
		}
		members := o.set.ordered()
		if l < 0 {
			out := make(arrayReply, 0, min(-l, 1<<20))
			for range -l {
				out = append(out, bulkReply(members[c.s.random().IntN(len(members))]))
			}
			return out
		}
		if l >= int64(len(members)) {
			return bulkArray(members, false)
		}
		c.s.random().Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		return bulkArray(members[:l], false)
	}
	o := c.lookupTyped(c.argv[1], "set")
	if o == nil {
		return nilReply{}
	}
	members := o.set.ordered()
	return bulkReply(members[c.s.random().IntN(len(members))])
}

// storeSet puts a computed set under dst as Redis's setKey does (replacing any
// value and its TTL), or deletes dst when the set is empty; it replies with the
// set's size.
func storeSet(c *cmdCtx, dst string, result *setValue) reply {
	if len(result.members) == 0 {
		if c.s.db.del(dst, c.now) {
			c.wrote(dst)
		}
		return intReply(0)
	}
	c.s.db.keys[dst] = &object{typ: "set", set: result}
	c.wrote(dst)
	return intReply(len(result.members))
}

func sinterGeneric(c *cmdCtx, keys []string, dst string, cardOnly bool, limit int64) reply {
	sets := make([]*setValue, 0, len(keys))
	empty := false
	for _, k := range keys {
		o := c.lookup(k)
		if o == nil {
			empty = true
			continue
		}
		if o.typ != "set" {
			return errWrongType
		}
		sets = append(sets, o.set)
	}
	if empty {
		switch {
		case dst != "":
			if c.s.db.del(dst, c.now) {
				c.wrote(dst)
			}
			return intReply(0)
		case cardOnly:
			return intReply(0)
		}
		return arrayReply{}
	}
	smallest := slices.MinFunc(sets, func(a, b *setValue) int { return len(a.members) - len(b.members) })
	result := &setValue{members: map[string]struct{}{}, intset: true}
	var inOrder []string
	card := int64(0)
	for _, m := range smallest.ordered() {
		inAll := true
		for _, s := range sets {
			if !s.has(m) {
				inAll = false
				break
			}
		}
		if !inAll {
			continue
		}
		card++
		if cardOnly && limit > 0 && card >= limit {
			break
		}
		inOrder = append(inOrder, m)
		result.add(m)
	}
	switch {
	case cardOnly:
		return intReply(card)
	case dst != "":
		return storeSet(c, dst, result)
	}
	return bulkArray(inOrder, false)
}

func cmdSInterCard(c *cmdCtx) reply {
	numkeys := must(getRangeLong(c.argv[1], 1, math.MaxInt64, "numkeys should be greater than 0"))
	if numkeys > int64(len(c.argv)-2) {
		return errReply("ERR Number of keys can't be greater than number of args")
	}
	limit := int64(0)
	for j := 2 + int(numkeys); j < len(c.argv); j++ {
		if strings.EqualFold(c.argv[j], "limit") && j < len(c.argv)-1 {
			j++
			limit = must(getPositiveLong(c.argv[j], "LIMIT can't be negative"))
			continue
		}
		return errSyntax
	}
	return sinterGeneric(c, c.argv[2:2+numkeys], "", true, limit)
}

const (
	opUnion = iota
	opDiff
)

func setOpGeneric(c *cmdCtx, keys []string, dst string, op int) reply {
	sets := make([]*setValue, len(keys))
	for i, k := range keys {
		o := c.lookup(k)
		if o == nil {
			continue
		}
		if o.typ != "set" {
			return errWrongType
		}
		sets[i] = o.set
	}
	result := &setValue{members: map[string]struct{}{}, intset: true}
	if op == opUnion {
		for _, s := range sets {
			if s == nil {
				continue
			}
			for _, m := range s.ordered() {
				result.add(m)
			}
		}
	} else if sets[0] != nil {
		for _, m := range sets[0].ordered() {
			in := false
			for _, s := range sets[1:] {
				if s != nil && s.has(m) {
					in = true
					break
				}
			}
			if !in {
				result.add(m)
			}
		}
	}
	if dst != "" {
		return storeSet(c, dst, result)
	}
	return bulkArray(result.ordered(), false)
}
