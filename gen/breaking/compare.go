package breaking

import (
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

type keyPair struct{ old, new *keyspec.Key }
type scriptPair struct{ old, new *keyspec.Script }
type channelPair struct{ old, new *keyspec.Channel }
type instancePair struct{ old, new *keyspec.Instance }
type dbPair struct{ old, new *keyspec.DB }

// keys pairs each live key of the old spec with the new key of its name (nil
// when the new spec has none, or has it only in a cut-over legacy database:
// cutOver then says so).
func (c *comparison) keys() (pairs []keyPair) {
	for _, o := range c.old.Spec.Keys {
		if !o.Live() {
			continue
		}
		pairs = append(pairs, keyPair{o, c.new.Spec.Key(o.Name)})
	}
	return pairs
}

// present are the pairs whose key both specs have live.
func (c *comparison) presentKeys() (pairs []keyPair) {
	for _, p := range c.keys() {
		if p.new != nil && p.new.Live() {
			pairs = append(pairs, p)
		}
	}
	return pairs
}

func (c *comparison) scripts() (pairs []scriptPair) {
	for _, o := range c.old.Spec.Scripts {
		if !o.Live() {
			continue
		}
		pairs = append(pairs, scriptPair{o, c.new.Spec.Script(o.ID)})
	}
	return pairs
}

func (c *comparison) presentScripts() (pairs []scriptPair) {
	for _, p := range c.scripts() {
		if p.new != nil && p.new.Live() {
			pairs = append(pairs, p)
		}
	}
	return pairs
}

func (c *comparison) channels() (pairs []channelPair) {
	for _, o := range c.old.Spec.Channels {
		var n *keyspec.Channel
		for _, x := range c.new.Spec.Channels {
			if x.Name == o.Name {
				n = x
			}
		}
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
			var n *keyspec.DB
			for _, x := range ip.new.DBs {
				if x.Name == o.Name {
					n = x
				}
			}
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
	for _, d := range n.DBs {
		if d.Name == db.Name {
			return !d.Live()
		}
	}
	return false
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
