package luatest

import (
	"math"
	"strings"
)

// Sorted set commands.

func cmdZAdd(c *cmdCtx) reply {
	key := c.argv[1]
	var cond updateConditions
	var ch, incr bool
	idx := 2
options:
	for ; idx < len(c.argv); idx++ {
		switch opt := strings.ToLower(c.argv[idx]); {
		case cond.parse(opt):
		case opt == "ch":
			ch = true
		case opt == "incr":
			incr = true
		default:
			break options
		}
	}
	nx, xx, gt, lt := cond.nx, cond.xx, cond.gt, cond.lt
	elements := len(c.argv) - idx
	if elements%2 != 0 || elements == 0 {
		return errSyntax
	}
	elements /= 2
	if nx && xx {
		return errReply("ERR XX and NX options at the same time are not compatible")
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		return errReply("ERR GT, LT, and/or NX options at the same time are not compatible")
	}
	if incr && elements > 1 {
		return errReply("ERR INCR option supports a single increment-element pair")
	}
	scores := make([]float64, elements)
	for j := range scores {
		v, ok := parseFloat(c.argv[idx+2*j])
		if !ok {
			return errNotFloat
		}
		scores[j] = v
	}
	o := c.lookupTyped(key, "zset")
	var added, updated, processed int
	var score float64
	if o == nil && !xx {
		o = &object{typ: "zset", zset: newZSet()}
		c.s.db.keys[key] = o
	}
	if o != nil {
		for j := 0; j < elements; j++ {
			score = scores[j]
			member := c.argv[idx+2*j+1]
			if cur, exists := o.zset.score(member); exists {
				if nx {
					continue
				}
				if incr {
					score += cur
					if math.IsNaN(score) {
						if added+updated > 0 {
							c.wrote(key)
						}
						return errReply("ERR resulting score is not a number (NaN)")
					}
				}
				if (lt && score >= cur) || (gt && score <= cur) {
					continue
				}
				if score != cur {
					o.zset.put(member, score)
					updated++
				}
				processed++
			} else if !xx {
				o.zset.put(member, score)
				added++
				processed++
			}
		}
		if o.zset.len() == 0 {
			delete(c.s.db.keys, key) // cannot happen in Redis either; keep the keyspace clean
		}
	}
	if added+updated > 0 {
		c.wrote(key)
	}
	if incr {
		if processed > 0 {
			return bulkReply(formatScore(score))
		}
		return nilReply{}
	}
	if ch {
		return intReply(added + updated)
	}
	return intReply(added)
}

// parseScoreRange parses min and max as Redis's zslParseRange does.
func parseScoreRange(min, max string) (scoreRange, bool) {
	var r scoreRange
	var ok bool
	if r.min, r.minex, ok = parseRangeEnd(min); !ok {
		return r, false
	}
	if r.max, r.maxex, ok = parseRangeEnd(max); !ok {
		return r, false
	}
	return r, true
}

func parseRangeEnd(s string) (float64, bool, bool) {
	if strings.HasPrefix(s, "(") {
		v, ok := parseRangeFloat(s[1:])
		return v, true, ok
	}
	v, ok := parseRangeFloat(s)
	return v, false, ok
}

// zsetRange is a sorted set command's min and max arguments read as ranks,
// scores or strings (kind byRank, byScore or byLex).
type zsetRange struct {
	kind       int
	start, end int64
	by         memberRange // byScore and byLex
}

// parseZSetRange reads min and max as kind; one that does not parse ends the
// command with Redis's error for kind.
func parseZSetRange(kind int, min, max string) zsetRange {
	r := zsetRange{kind: kind}
	ok := true
	switch kind {
	case byRank:
		r.start = must(getLong(min, ""))
		r.end = must(getLong(max, ""))
	case byScore:
		r.by, ok = parseScoreRange(min, max)
		if !ok {
			check(errMinMax)
		}
	case byLex:
		r.by, ok = parseLexRange(min, max)
		if !ok {
			check(errReply("ERR min or max not valid string range item"))
		}
	}
	return r
}

// members lists the members of z in r, in ascending order.
func (r zsetRange) members(z *zsetValue) []Member {
	if r.kind != byRank {
		return z.inRange(r.by)
	}
	s, e, ok := rankRange(r.start, r.end, z.len())
	if !ok {
		return nil
	}
	return append([]Member(nil), z.sorted[s:e+1]...)
}

// zcount is ZCOUNT (byScore) and ZLEXCOUNT (byLex).
func zcount(kind int) handler {
	return func(c *cmdCtx) reply {
		r := parseZSetRange(kind, c.argv[2], c.argv[3])
		o := c.lookupTyped(c.argv[1], "zset")
		if o == nil {
			return intReply(0)
		}
		return intReply(len(r.members(o.zset)))
	}
}

// rankRange sanitises start/stop as Redis does; ok is false for an empty range.
func rankRange(start, end int64, n int) (int, int, bool) {
	llen := int64(n)
	if start < 0 {
		start += llen
	}
	if end < 0 {
		end += llen
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= llen {
		return 0, 0, false
	}
	if end >= llen {
		end = llen - 1
	}
	return int(start), int(end), true
}

const (
	byRank = iota
	byScore
	byLex
)

// zrangeVariant is zrangeGenericCommand: preset is the range type a legacy
// command fixes (-1 for ZRANGE, which takes BYSCORE, BYLEX and REV options);
// rev is its direction.
func zrangeVariant(c *cmdCtx, preset int, rev bool) reply {
	rangeType := preset
	revSet := preset != -1
	withScores := false
	offset, limit := int64(0), int64(-1)
	for j := 4; j < len(c.argv); j++ {
		left := len(c.argv) - j - 1
		opt := strings.ToLower(c.argv[j])
		switch {
		case opt == "withscores":
			withScores = true
		case opt == "limit" && left >= 2:
			offset, limit = parseLimit(c.argv[j+1], c.argv[j+2])
			j += 2
		case !revSet && opt == "rev":
			rev, revSet = true, true
		case rangeType == -1 && opt == "bylex":
			rangeType = byLex
		case rangeType == -1 && opt == "byscore":
			rangeType = byScore
		default:
			return errSyntax
		}
	}
	if rangeType == -1 {
		rangeType = byRank
	}
	if limit != -1 && rangeType == byRank {
		return errReply("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	}
	if withScores && rangeType == byLex {
		return errReply("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
	}
	minArg, maxArg := c.argv[2], c.argv[3]
	if rev && rangeType != byRank {
		minArg, maxArg = maxArg, minArg
	}
	r := parseZSetRange(rangeType, minArg, maxArg)
	o := c.lookupTyped(c.argv[1], "zset")
	if o == nil {
		return arrayReply{}
	}
	var members []Member
	if rangeType == byRank {
		s, e, ok := rankRange(r.start, r.end, o.zset.len())
		if ok {
			if rev {
				n := o.zset.len()
				for i := s; i <= e; i++ {
					members = append(members, o.zset.sorted[n-1-i])
				}
			} else {
				members = append(members, o.zset.sorted[s:e+1]...)
			}
		}
	} else {
		all := r.members(o.zset)
		if rev {
			for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
				all[i], all[j] = all[j], all[i]
			}
		}
		switch {
		case offset < 0 || offset >= int64(len(all)):
			all = nil
		default:
			all = all[offset:]
			if limit >= 0 && limit < int64(len(all)) {
				all = all[:limit]
			}
		}
		members = all
	}
	out := arrayReply{}
	for _, m := range members {
		out = append(out, bulkReply(m.Member))
		if withScores {
			out = append(out, bulkReply(formatScore(m.Score)))
		}
	}
	return out
}

// zremrange is ZREMRANGEBYRANK, ZREMRANGEBYSCORE and ZREMRANGEBYLEX (kind
// byRank, byScore, byLex).
func zremrange(kind int) handler {
	return func(c *cmdCtx) reply {
		key := c.argv[1]
		r := parseZSetRange(kind, c.argv[2], c.argv[3])
		o := c.lookupTyped(key, "zset")
		if o == nil {
			return intReply(0)
		}
		victims := r.members(o.zset)
		for _, m := range victims {
			o.zset.del(m.Member)
		}
		if len(victims) > 0 {
			c.wrote(key)
		}
		c.deleteIfEmpty(key, o)
		return intReply(len(victims))
	}
}

// lexBound is one end of a BYLEX range: "-" (inf -1), "+" (inf 1), "[x" or "(x".
type lexBound struct {
	s   string
	inf int
	ex  bool
}

type lexRange struct{ min, max lexBound }

func parseLexBound(s string) (lexBound, bool) {
	switch {
	case s == "+":
		return lexBound{inf: 1, ex: true}, true
	case s == "-":
		return lexBound{inf: -1, ex: true}, true
	case strings.HasPrefix(s, "("):
		return lexBound{s: s[1:], ex: true}, true
	case strings.HasPrefix(s, "["):
		return lexBound{s: s[1:]}, true
	}
	return lexBound{}, false
}

func parseLexRange(min, max string) (lexRange, bool) {
	lo, ok1 := parseLexBound(min)
	hi, ok2 := parseLexBound(max)
	return lexRange{lo, hi}, ok1 && ok2
}

// cmpLex compares two bounds as Redis's sdscmplex: "-" below and "+" above every string.
func cmpLex(a, b lexBound) int {
	if a.inf != 0 || b.inf != 0 {
		switch {
		case a.inf == b.inf:
			return 0
		case a.inf == -1 || b.inf == 1:
			return -1
		}
		return 1
	}
	return strings.Compare(a.s, b.s)
}

func (r lexRange) empty() bool {
	c := cmpLex(r.min, r.max)
	return c > 0 || (c == 0 && (r.min.ex || r.max.ex))
}

func (r lexRange) gteMin(m Member) bool {
	c := cmpLex(lexBound{s: m.Member}, r.min)
	if r.min.ex {
		return c > 0
	}
	return c >= 0
}

func (r lexRange) lteMax(m Member) bool {
	c := cmpLex(lexBound{s: m.Member}, r.max)
	if r.max.ex {
		return c < 0
	}
	return c <= 0
}
