package luatest

import (
	"sort"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// NoTTL is Entry.TTL for a key without a time to live.
const NoTTL time.Duration = -1

// Keyspace is a snapshot of a database: every live key and its value. Snapshots
// of the harness (Server.Keyspace) and of a real Redis (RedisKeyspace) have the
// same shape, so conformance tests compare them with DiffKeyspaces (or go-cmp
// directly, with a tolerance for TTLs, which a real server counts down).
type Keyspace map[string]Entry

// DiffKeyspaces describes how got differs from want in go-cmp's format (-want
// +got), or returns "" when they match. TTLs match when they are equal or both
// set and at most ttlTolerance apart; an empty hash matches a nil one.
func DiffKeyspaces(got, want Keyspace, ttlTolerance time.Duration) string {
	ttl := cmp.Comparer(func(a, b time.Duration) bool {
		if a < 0 || b < 0 {
			return a == b
		}
		return (a - b).Abs() <= ttlTolerance
	})
	return cmp.Diff(want, got, ttl, cmpopts.EquateEmpty())
}

// Entry is one key of a Keyspace.
type Entry struct {
	Type   string            // "string", "hash", "zset", "list", "set" or "stream" (RedisKeyspace may report other types, without a value)
	String string            // the value of a string
	Hash   map[string]string // the fields of a hash
	ZSet   []Member          // the members of a sorted set, by score then member, as Redis orders them
	List   []string          // the elements of a list, head first
	Set    []string          // the members of a set, sorted as strings
	Stream *Stream           // a stream's entries, IDs and consumer groups
	TTL    time.Duration     // remaining time to live, millisecond precision; NoTTL (-1) when the key has none
}

// Member is one member of a sorted set.
type Member struct {
	Member string
	Score  float64
}

// object is one value of the in-memory keyspace.
type object struct {
	typ       string // "string", "hash", "zset", "list", "set", "stream"
	str       string
	hash      *hashValue
	zset      *zsetValue
	list      *listValue
	set       *setValue
	stream    *streamValue
	expireAt  int64 // Unix ms; meaningful when hasExpire
	hasExpire bool
}

// size is the length of a string, or the number of elements of a list, set,
// hash, sorted set or stream.
func (o *object) size() int {
	switch o.typ {
	case "string":
		return len(o.str)
	case "list":
		return len(o.list.items)
	case "set":
		return len(o.set.members)
	case "hash":
		return o.hash.len()
	case "zset":
		return o.zset.len()
	}
	return int(o.stream.length)
}

// element is the i-th element of a list, or the i-th member of a sorted set
// in ascending order.
func (o *object) element(i int) string {
	if o.typ == "list" {
		return o.list.items[i]
	}
	return o.zset.sorted[i].Member
}

// removeMember removes the field of a hash or the member of a set or sorted
// set, true when it was there.
func (o *object) removeMember(m string) bool {
	switch o.typ {
	case "hash":
		return o.hash.del(m)
	case "zset":
		return o.zset.del(m)
	}
	if !o.set.has(m) {
		return false
	}
	delete(o.set.members, m)
	return true
}

// hashValue keeps fields in insertion order, as a small Redis hash (listpack) does.
type hashValue struct {
	order  []string
	fields map[string]string
}

func newHash() *hashValue { return &hashValue{fields: map[string]string{}} }

func (h *hashValue) get(f string) (string, bool) {
	v, ok := h.fields[f]
	return v, ok
}

// set stores a field and reports whether it is new.
func (h *hashValue) set(f, v string) bool {
	_, ok := h.fields[f]
	if !ok {
		h.order = append(h.order, f)
	}
	h.fields[f] = v
	return !ok
}

func (h *hashValue) del(f string) bool {
	if _, ok := h.fields[f]; !ok {
		return false
	}
	delete(h.fields, f)
	for i, name := range h.order {
		if name == f {
			h.order = append(h.order[:i], h.order[i+1:]...)
			break
		}
	}
	return true
}

func (h *hashValue) len() int { return len(h.order) }

// zsetValue keeps members sorted by (score, member), as Redis does.
type zsetValue struct {
	sorted []Member
	scores map[string]float64
}

func newZSet() *zsetValue { return &zsetValue{scores: map[string]float64{}} }

func zless(a, b Member) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Member < b.Member
}

func (z *zsetValue) score(m string) (float64, bool) {
	s, ok := z.scores[m]
	return s, ok
}

func (z *zsetValue) len() int { return len(z.sorted) }

func (z *zsetValue) index(m Member) int {
	return sort.Search(len(z.sorted), func(i int) bool { return !zless(z.sorted[i], m) })
}

// put inserts or moves a member.
func (z *zsetValue) put(m string, score float64) {
	if score == 0 {
		score = 0 // no negative zero: Redis replies 0 for a score of -0
	}
	if old, ok := z.scores[m]; ok {
		z.remove(m, old)
	}
	e := Member{Member: m, Score: score}
	i := z.index(e)
	z.sorted = append(z.sorted, Member{})
	copy(z.sorted[i+1:], z.sorted[i:])
	z.sorted[i] = e
	z.scores[m] = score
}

func (z *zsetValue) remove(m string, score float64) {
	i := z.index(Member{Member: m, Score: score})
	if i < len(z.sorted) && z.sorted[i].Member == m {
		z.sorted = append(z.sorted[:i], z.sorted[i+1:]...)
	}
	delete(z.scores, m)
}

func (z *zsetValue) del(m string) bool {
	s, ok := z.scores[m]
	if !ok {
		return false
	}
	z.remove(m, s)
	return true
}

// scoreRange is a parsed min/max pair of ZRANGEBYSCORE and friends.
type scoreRange struct {
	min, max     float64
	minex, maxex bool
}

func (r scoreRange) empty() bool {
	return r.min > r.max || (r.min == r.max && (r.minex || r.maxex))
}

func (r scoreRange) gteMin(m Member) bool {
	v := m.Score
	if r.minex {
		return v > r.min
	}
	return v >= r.min
}

func (r scoreRange) lteMax(m Member) bool {
	v := m.Score
	if r.maxex {
		return v < r.max
	}
	return v <= r.max
}

// memberRange is a range of a sorted set's members by score (scoreRange) or
// by string (lexRange).
type memberRange interface {
	empty() bool
	gteMin(m Member) bool
	lteMax(m Member) bool
}

// inRange lists the members within r in ascending order, walking the set as
// Redis does: from the first member at or above min, while members stay at
// or below max.
func (z *zsetValue) inRange(r memberRange) []Member {
	if r.empty() {
		return nil
	}
	i := 0
	for i < len(z.sorted) && !r.gteMin(z.sorted[i]) {
		i++
	}
	var out []Member
	for ; i < len(z.sorted) && r.lteMax(z.sorted[i]); i++ {
		out = append(out, z.sorted[i])
	}
	return out
}

// db is the keyspace of one logical database.
type db struct {
	keys map[string]*object
}

func newDB() *db { return &db{keys: map[string]*object{}} }

// expired reports whether o is past its deadline at now (Unix ms). Like Redis,
// a key lives through its deadline millisecond.
func (o *object) expired(now int64) bool {
	return o.hasExpire && now > o.expireAt
}

// lookup returns the live object under key, deleting it first if it expired.
func (d *db) lookup(key string, now int64) *object {
	o := d.keys[key]
	if o == nil {
		return nil
	}
	if o.expired(now) {
		delete(d.keys, key)
		return nil
	}
	return o
}

func (d *db) del(key string, now int64) bool {
	if d.lookup(key, now) == nil {
		return false
	}
	delete(d.keys, key)
	return true
}

// snapshot drops expired keys and copies the rest.
func (d *db) snapshot(now int64) Keyspace {
	ks := Keyspace{}
	for k, o := range d.keys {
		if o.expired(now) {
			delete(d.keys, k)
			continue
		}
		e := Entry{Type: o.typ, TTL: NoTTL}
		if o.hasExpire {
			e.TTL = time.Duration(o.expireAt-now) * time.Millisecond
		}
		switch o.typ {
		case "string":
			e.String = o.str
		case "hash":
			e.Hash = make(map[string]string, len(o.hash.fields))
			for f, v := range o.hash.fields {
				e.Hash[f] = v
			}
		case "zset":
			e.ZSet = append([]Member(nil), o.zset.sorted...)
		case "list":
			e.List = append([]string(nil), o.list.items...)
		case "set":
			e.Set = o.set.sortedStrings()
		case "stream":
			e.Stream = o.stream.snapshot()
		}
		ks[k] = e
	}
	return ks
}
