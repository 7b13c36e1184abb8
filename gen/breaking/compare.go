package breaking

import (
	"slices"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/snapshot"
)

// comparison is the two revisions and their entries matched by name.
type comparison struct {
	old, new *snapshot.Snapshot
	aclPairs *[]aclPair // derived on first use
}

func newComparison(old, new *snapshot.Snapshot) *comparison {
	return &comparison{old: old, new: new}
}

// pair is an entry of the old spec and the new spec's entry of its name (nil
// when the new spec has none).
type pair[T any] struct{ old, new T }

type keyPair = pair[*keyspec.Key]
type scriptPair = pair[*keyspec.Script]
type channelPair = pair[*keyspec.Channel]
type instancePair = pair[*keyspec.Instance]
type dbPair = pair[*keyspec.DB]

// liveEntry is a key, script or database: removed from use (a legacy entry)
// when not Live.
type liveEntry interface {
	comparable
	Live() bool
}

// livePairs pairs each live entry of olds with its entry in the new spec,
// which newOf finds.
func livePairs[T liveEntry](olds []T, newOf func(T) T) (pairs []pair[T]) {
	for _, o := range olds {
		if o.Live() {
			pairs = append(pairs, pair[T]{o, newOf(o)})
		}
	}
	return pairs
}

// present are the pairs whose entry both specs have live.
func present[T liveEntry](all []pair[T]) (pairs []pair[T]) {
	var none T
	for _, p := range all {
		if p.new != none && p.new.Live() {
			pairs = append(pairs, p)
		}
	}
	return pairs
}

// changed are the pairs of all whose entry the new spec has and whose
// property prop differs from the old entry's.
func changed[T comparable, V comparable](all []pair[T], prop func(T) V) (pairs []pair[T]) {
	var none T
	for _, p := range all {
		if p.new != none && prop(p.new) != prop(p.old) {
			pairs = append(pairs, p)
		}
	}
	return pairs
}

// named is the entry of list that name finds, or nil.
func named[T any](list []T, name func(T) bool) (found T) {
	if i := slices.IndexFunc(list, name); i >= 0 {
		return list[i]
	}
	return found
}

// keys pairs each live key of the old spec with the new key of its name (nil
// when the new spec has none, or has it only in a cut-over legacy database:
// cutOver then says so).
func (c *comparison) keys() []keyPair {
	return livePairs(c.old.Spec.Keys, func(o *keyspec.Key) *keyspec.Key { return c.new.Spec.Key(o.Name) })
}

// presentKeys are the pairs whose key both specs have live.
func (c *comparison) presentKeys() []keyPair { return present(c.keys()) }

func (c *comparison) scripts() []scriptPair {
	return livePairs(c.old.Spec.Scripts, func(o *keyspec.Script) *keyspec.Script { return c.new.Spec.Script(o.ID) })
}

func (c *comparison) presentScripts() []scriptPair { return present(c.scripts()) }

func (c *comparison) channels() (pairs []channelPair) {
	for _, o := range c.old.Spec.Channels {
		n := named(c.new.Spec.Channels, func(x *keyspec.Channel) bool { return x.Name == o.Name })
		pairs = append(pairs, channelPair{o, n})
	}
	return pairs
}

func (c *comparison) instances() (pairs []instancePair) {
	for _, o := range c.old.Spec.Instances {
		pairs = append(pairs, instancePair{o, c.new.Spec.Instance(o.Name)})
	}
	return pairs
}

// dbs pairs every live database of the old spec's instances that the new spec
// still has with the new database of its name (nil when gone).
func (c *comparison) dbs() (pairs []dbPair) {
	for _, ip := range c.instances() {
		if ip.new == nil {
			continue
		}
		for _, o := range ip.old.LiveDBs() {
			n := named(ip.new.DBs, func(x *keyspec.DB) bool { return x.Name == o.Name })
			pairs = append(pairs, dbPair{o, n})
		}
	}
	return pairs
}

// cutOver reports whether the new spec has the database of this ID as a
// legacy database that was cut over: its keys and scripts leave on purpose.
func (c *comparison) cutOver(db *keyspec.DB) bool {
	n := c.new.Spec.Instance(db.Instance.Name)
	if n == nil {
		return false
	}
	d := named(n.DBs, func(d *keyspec.DB) bool { return d.Name == db.Name })
	return d != nil && !d.Live()
}

// The paths ignore entries name.

func keyEntry(k *keyspec.Key) string          { return "keys." + k.Name }
func scriptEntry(s *keyspec.Script) string    { return "scripts." + s.ID }
func channelEntry(ch *keyspec.Channel) string { return "channels." + ch.Name }
func userEntry(name string) string            { return "users." + name }
func instanceEntry(name string) string        { return "instances." + name }
func dbEntry(d *keyspec.DB) string            { return "instances." + d.Instance.Name + ".dbs." + d.Name }

// dur is a duration as the spec writes it: 30s, 5m, 24h, 30d.
func dur(d time.Duration) string { return keyspec.FormatDuration(d) }

// values lists a value set as the spec writes it: [hash, msgpack].
func values(v []string) string { return "[" + strings.Join(v, ", ") + "]" }

// missing lists the elements of old that new lacks.
func missing(old, new []string) []string {
	have := map[string]bool{}
	for _, x := range new {
		have[x] = true
	}
	var out []string
	for _, x := range old {
		if !have[x] {
			out = append(out, x)
		}
	}
	return out
}
