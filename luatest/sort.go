package luatest

import (
	"bytes"
	"math"
	"sort"
	"strings"
)

// SORT and SORT_RO, after Redis 7.0's sort.c. Keys read through BY and GET
// patterns count as touched (Redis's key specs cannot name them either).

type sortItem struct {
	obj    string
	score  float64
	cmpobj *string
}

// lookupByPattern is lookupKeyByPattern: "#" is the element itself; the
// first '*' takes the element, "->field" reads a hash field.
func lookupByPattern(c *cmdCtx, pattern, subst string) (string, bool) {
	if pattern == "#" {
		return subst, true
	}
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return "", false
	}
	keyEnd, field := len(pattern), ""
	if f := strings.Index(pattern[star+1:], "->"); f >= 0 && star+1+f+2 < len(pattern) {
		keyEnd = star + 1 + f
		field = pattern[keyEnd+2:]
	}
	key := pattern[:star] + subst + pattern[star+1:keyEnd]
	if c.run != nil {
		c.run.touch(key)
	}
	o := c.lookup(key)
	if o == nil {
		return "", false
	}
	if field != "" {
		if o.typ != "hash" {
			return "", false
		}
		return o.hash.get(field)
	}
	if o.typ != "string" {
		return "", false
	}
	return o.str, true
}

func sortGeneric(c *cmdCtx, readOnly bool) reply {
	var desc, alpha, dontsort bool
	limitStart, limitCount := int64(0), int64(-1)
	var sortBy, storeKey string
	hasSortBy, hasStore := false, false
	var gets []string
	for j := 2; j < len(c.argv); j++ {
		left := len(c.argv) - j - 1
		switch opt := strings.ToLower(c.argv[j]); {
		case opt == "asc":
			desc = false
		case opt == "desc":
			desc = true
		case opt == "alpha":
			alpha = true
		case opt == "limit" && left >= 2:
			limitStart, limitCount = parseLimit(c.argv[j+1], c.argv[j+2])
			j += 2
		case !readOnly && opt == "store" && left >= 1:
			storeKey, hasStore = c.argv[j+1], true
			j++
		case opt == "by" && left >= 1:
			sortBy, hasSortBy = c.argv[j+1], true
			if !strings.Contains(sortBy, "*") {
				dontsort = true
			}
			j++
		case opt == "get" && left >= 1:
			gets = append(gets, c.argv[j+1])
			j++
		default:
			return errSyntax
		}
	}
	o := c.lookup(c.argv[1])
	if o != nil && o.typ != "set" && o.typ != "list" && o.typ != "zset" {
		return errWrongType
	}
	typ := "list"
	if o != nil {
		typ = o.typ
	}
	if dontsort && typ == "set" && (hasStore || c.run != nil) {
		// A set's order is Redis's hashing: scripts and STORE get it sorted.
		dontsort, alpha, hasSortBy = false, true, false
	}
	var n int64
	switch {
	case o == nil:
	case typ == "list":
		n = int64(len(o.list.items))
	case typ == "set":
		n = int64(len(o.set.members))
	default:
		n = int64(o.zset.len())
	}
	start := min(max(limitStart, 0), n)
	limitCount = min(max(limitCount, -1), n)
	end := start + limitCount - 1
	if limitCount < 0 {
		end = n - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	if end >= n {
		end = n - 1
	}
	var items []sortItem
	switch {
	case o == nil:
	case (typ == "list" || typ == "zset") && dontsort:
		if end >= start {
			for i := start; i <= end; i++ {
				idx := i
				if desc {
					idx = n - 1 - i
				}
				items = append(items, sortItem{obj: o.element(int(idx))})
			}
			end -= start
			start = 0
		}
	case typ == "list":
		for _, v := range o.list.items {
			items = append(items, sortItem{obj: v})
		}
	case typ == "set":
		for _, v := range o.set.ordered() {
			items = append(items, sortItem{obj: v})
		}
	default:
		for _, m := range o.zset.sorted {
			items = append(items, sortItem{obj: m.Member})
		}
	}
	conversionError := false
	if !dontsort {
		for j := range items {
			byval := items[j].obj
			if hasSortBy {
				v, ok := lookupByPattern(c, sortBy, items[j].obj)
				if !ok {
					continue
				}
				byval = v
			}
			if alpha {
				if hasSortBy {
					v := byval
					items[j].cmpobj = &v
				}
				continue
			}
			v, n := strtodPrefix(byval)
			if n != len(byval) || (byval != "" && isCSpace(byval[0]) && n == 0) || math.IsNaN(v) || (math.IsInf(v, 0) && !isInfText(byval)) {
				conversionError = true
			}
			items[j].score = v
		}
		sort.SliceStable(items, func(a, b int) bool {
			cmp := sortCompare(items[a], items[b], alpha, hasSortBy)
			if desc {
				cmp = -cmp
			}
			return cmp < 0
		})
	}
	if conversionError {
		return errReply("ERR One or more scores can't be converted into double")
	}
	var out arrayReply
	var stored []string
	for j := start; j <= end && j >= 0; j++ {
		obj := items[j].obj
		if len(gets) == 0 {
			out = append(out, bulkReply(obj))
			stored = append(stored, obj)
		}
		for _, g := range gets {
			v, ok := lookupByPattern(c, g, obj)
			if ok {
				out = append(out, bulkReply(v))
				stored = append(stored, v)
			} else {
				out = append(out, nilReply{})
				stored = append(stored, "")
			}
		}
	}
	if !hasStore {
		if out == nil {
			out = arrayReply{}
		}
		return out
	}
	if len(stored) > 0 {
		c.s.db.keys[storeKey] = &object{typ: "list", list: &listValue{items: stored}}
		c.wrote(storeKey)
	} else if c.s.db.del(storeKey, c.now) {
		c.wrote(storeKey)
	}
	return intReply(len(stored))
}

// isInfText reports whether strtod read an infinity spelled out (which Redis
// accepts), as opposed to a finite number out of range (ERANGE).
func isInfText(s string) bool {
	t := strings.ToLower(strings.TrimLeft(s, " \t\n\v\f\r+-"))
	return strings.HasPrefix(t, "inf")
}

// sortCompare is sort.c's sortCompare (ascending).
func sortCompare(a, b sortItem, alpha, byPattern bool) int {
	if !alpha {
		switch {
		case a.score > b.score:
			return 1
		case a.score < b.score:
			return -1
		}
		return bytes.Compare([]byte(a.obj), []byte(b.obj))
	}
	if byPattern {
		switch {
		case a.cmpobj == nil && b.cmpobj == nil:
			return 0
		case a.cmpobj == nil:
			return -1
		case b.cmpobj == nil:
			return 1
		}
		return strings.Compare(*a.cmpobj, *b.cmpobj)
	}
	return strings.Compare(a.obj, b.obj)
}
