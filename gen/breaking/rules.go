package breaking

import (
	"fmt"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
)

// Rules are every rule, in the order their findings are made. Each checks one
// concern; docs/keyspec.md ("breaking") lists them.
var Rules = []Rule{
	// ---- data: instances and databases ----
	{Name: "instance-removed", Category: Data, Severity: Error,
		Doc: "an instance is gone: everything stored on it is stranded", check: instanceRemoved},
	{Name: "deployment-prefix-changed", Category: Data, Severity: Error,
		Doc: "an instance gains or loses its deployment prefix: every key name changes", check: deploymentPrefixChanged},
	{Name: "db-removed", Category: Data, Severity: Error,
		Doc: "a live database is gone (a legacy database cut over is legacy-cut-over)", check: dbRemoved},
	{Name: "db-index-moved", Category: Data, Severity: Error,
		Doc: "a database has another index: its data stays in the old one", check: dbIndexMoved},
	{Name: "db-server-moved", Category: Data, Severity: Error,
		Doc: "a database of a split instance moves to another server: its data stays on the old one", check: dbServerMoved},
	// ---- data: keys ----
	{Name: "key-removed", Category: Data, Severity: Error,
		Doc: "a key pattern is gone (and no key of the same database has its pattern): its live data is stranded", check: keyRemoved},
	{Name: "key-moved", Category: Data, Severity: Error,
		Doc: "a key lives in another database: its data stays in the old one", check: keyMoved},
	{Name: "key-pattern-changed", Category: Data, Severity: Error,
		Doc: "a key's pattern makes other names (literals, placeholders or hash tag moved): its data is stranded", check: keyPatternChanged},
	{Name: "placeholder-narrowed", Category: Data, Severity: Error,
		Doc: "a key placeholder accepts fewer values: keys made of the others are out of reach", check: placeholderNarrowed},
	{Name: "placeholder-encoding-changed", Category: Data, Severity: Error,
		Doc: "a key placeholder writes other text for the same value (sha256, enum encode): the same call makes another key", check: placeholderEncoding},
	{Name: "value-type-changed", Category: Data, Severity: Error,
		Doc: "a key may no longer hold a value type it held: values the previous release wrote do not read back", check: valueTypeChanged},
	{Name: "value-bound-lowered", Category: Data, Severity: Warning,
		Doc: "a key's max_bytes, max_len or retention is lower, or a hash or stream field is gone: stored values may exceed it", check: valueBoundLowered},
	// ---- data: TTLs ----
	{Name: "durable-made-expiring", Category: Data, Severity: Error,
		Doc: "a key declared ttl: none now expires: data kept as durable is dropped", check: durableMadeExpiring},
	{Name: "expiring-made-durable", Category: Data, Severity: Warning,
		Doc: "an expiring key is now ttl: none: keys set by the previous release still expire, new ones never do", check: expiringMadeDurable},
	{Name: "ttl-rule-changed", Category: Data, Severity: Error,
		Doc: "a key's TTL rule changed between two expiring rules", check: ttlRuleChanged},
	{Name: "ttl-shortened", Category: Data, Severity: Error,
		Doc: "a key's TTL (value, clamp or jitter) is shorter: entries expire sooner than the previous release expects (sessions drop)", check: ttlShortened},
	{Name: "ttl-lengthened", Category: Data, Severity: Warning,
		Doc: "a key's TTL is longer: keys outlive what the previous release and the sizing assume", check: ttlLengthened},
	{Name: "ttl-bound-changed", Category: Data, Severity: Warning,
		Doc: "a TTL's declared cap (max) or floor (exceeds) moved, the TTL itself unchanged", check: ttlBoundChanged},
	// ---- rolling deploy ----
	{Name: "instance-mode-changed", Category: RollingDeploy, Severity: Error,
		Doc: "an instance switches between evalsha and functions: processes of the previous release call scripts the other way", check: instanceModeChanged},
	{Name: "db-url-env-changed", Category: RollingDeploy, Severity: Warning,
		Doc: "a database's URL variable is renamed: every deployment must set the new one before the rollout", check: dbURLEnvChanged},
	{Name: "legacy-cut-over", Category: RollingDeploy, Severity: Warning,
		Doc: "a legacy database is cut over: its keys and scripts go; the previous release must no longer use them", check: legacyCutOver},
	{Name: "script-removed", Category: RollingDeploy, Severity: Error,
		Doc: "a script is gone: callers of the previous release still call it", check: scriptRemoved},
	{Name: "script-keys-changed", Category: RollingDeploy, Severity: Error,
		Doc: "a script's KEYS positions were reordered, removed, added, or accept fewer keys", check: scriptKeysChanged},
	{Name: "script-argv-changed", Category: RollingDeploy, Severity: Error,
		Doc: "a script's ARGV positions were reordered, removed, added as required, or accept less (type or bound narrowed)", check: scriptArgvChanged},
	{Name: "script-repeat-narrowed", Category: RollingDeploy, Severity: Error,
		Doc: "a repeating KEYS or ARGV position takes fewer values (min raised, max lowered, the repeat removed)", check: scriptRepeatNarrowed},
	{Name: "script-position-changed", Category: RollingDeploy, Severity: Error,
		Doc: "a KEYS or ARGV position carries something else: an unused position is now read, a key became a channel's name or the reverse, or another channel", check: scriptPositionChanged},
	{Name: "script-reply-changed", Category: RollingDeploy, Severity: Error,
		Doc: "a script's reply (or one of its shapes chosen by an argument) has other fields, types, enum values or nulls than a decoder of the previous release reads, or a shape is gone", check: scriptReplyChanged},
	{Name: "script-error-removed", Category: RollingDeploy, Severity: Error,
		Doc: "a script no longer declares an error code callers of the previous release match on", check: scriptErrorRemoved},
	{Name: "script-read-only-changed", Category: RollingDeploy, Severity: Error,
		Doc: "a read-only script now writes: the previous release sends it by EVALSHA_RO or FCALL_RO, which refuse writes", check: scriptReadOnlyChanged},
	{Name: "function-replaced", Category: RollingDeploy, Severity: Error,
		Doc: "functions mode: a script's Lua changed, so its function's name (which carries its SHA1) changed, and FUNCTION LOAD REPLACE removes the one the previous release calls", check: functionReplaced},
	{Name: "channel-removed", Category: RollingDeploy, Severity: Error,
		Doc: "a channel is gone: subscribers or publishers of the previous release talk to nobody", check: channelRemoved},
	{Name: "channel-pattern-changed", Category: RollingDeploy, Severity: Error,
		Doc: "a channel's pattern makes other names, a placeholder accepts fewer values, or it moved to another instance or server", check: channelPatternChanged},
	// ---- acl ----
	{Name: "user-removed", Category: ACL, Severity: Error,
		Doc: "an ACL user the previous release's aclfile had is gone: its processes cannot authenticate", check: userRemoved},
	{Name: "grant-lost", Category: ACL, Severity: Error,
		Doc: "a user loses a command, key pattern (or write access) or channel the previous release's aclfile granted for its scripts or code", check: grantLost},
}

// ---- data: instances and databases ----

func instanceRemoved(c *comparison, r *reporter) {
	for _, p := range c.instances() {
		if p.new == nil {
			r.at(p.old.Pos, instanceEntry(p.old.Name), "instance %q is gone: everything stored on it is stranded (%d keys declared)", p.old.Name, len(c.old.Spec.KeysOf(p.old)))
		}
	}
}

func deploymentPrefixChanged(c *comparison, r *reporter) {
	for _, p := range c.instances() {
		switch {
		case p.new == nil:
		case p.old.Prefix == nil && p.new.Prefix != nil:
			r.at(p.new.Prefix.Pos, instanceEntry(p.new.Name), "instance %q gains a deployment prefix: every key and channel name now starts with it, and the data under the old names is stranded", p.new.Name)
		case p.old.Prefix != nil && p.new.Prefix == nil:
			r.at(p.new.Pos, instanceEntry(p.new.Name), "instance %q loses its deployment prefix: every key and channel name loses it, and the data under the old names is stranded", p.new.Name)
		case p.old.Prefix != nil && (p.old.Prefix.Env != p.new.Prefix.Env || p.old.Prefix.DefaultFrom != p.new.Prefix.DefaultFrom):
			r.with(Warning, p.new.Prefix.Pos, instanceEntry(p.new.Name), "instance %q takes its deployment prefix from env %q / default_from %q, was %q / %q: unless every deployment sets the same value there, its names change", p.new.Name, p.new.Prefix.Env, p.new.Prefix.DefaultFrom, p.old.Prefix.Env, p.old.Prefix.DefaultFrom)
		}
	}
}

func dbRemoved(c *comparison, r *reporter) {
	for _, p := range c.dbs() {
		if p.new == nil {
			r.at(p.old.Pos, dbEntry(p.old), "database %s (index %d) is gone: everything stored in it is stranded", p.old.ID(), p.old.Index)
		}
	}
}

func dbIndexMoved(c *comparison, r *reporter) {
	for _, p := range changed(present(c.dbs()), func(d *keyspec.DB) int { return d.Index }) {
		r.at(p.new.Pos, dbEntry(p.new), "database %s moves from index %d to %d: its data stays in database %d, where nothing reads it", p.new.ID(), p.old.Index, p.new.Index, p.old.Index)
	}
}

func dbServerMoved(c *comparison, r *reporter) {
	for _, p := range changed(present(c.dbs()), func(d *keyspec.DB) string { return d.ServerOf().Name }) {
		r.at(p.new.Pos, dbEntry(p.new), "database %s moves from server %s to %s: its data stays on the old server until it is copied", p.new.ID(), serverName(p.old.ServerOf()), serverName(p.new.ServerOf()))
	}
}

func serverName(s *keyspec.Server) string {
	if s.Name == "" {
		return "(the instance's own)"
	}
	return s.Name
}

// ---- data: keys ----

func keyRemoved(c *comparison, r *reporter) {
	for _, p := range c.keys() {
		if p.new != nil && p.new.Live() || c.cutOver(p.old.DB) || c.new.Spec.Instance(p.old.DB.Instance.Name) == nil {
			continue // present; leaving with its legacy database; or with its instance
		}
		if n := samePattern(c, p.old); n != nil {
			continue // the entry was renamed; the names it makes are the same
		}
		r.at(p.old.Pos, keyEntry(p.old), "key %q (%s in %s) is gone: the data under it is stranded (nothing the new release runs reads, expires or deletes it); keep the key until the data is migrated or expired, or accept it in breaking: ignore", p.old.Name, p.old.Pattern.Raw, p.old.DB.ID())
	}
}

// samePattern is a live key of the new spec, in the same database, whose
// pattern makes the same names as old's, or nil.
func samePattern(c *comparison, old *keyspec.Key) *keyspec.Key {
	for _, k := range c.new.Spec.Keys {
		if k.Live() && k.DB.ID() == old.DB.ID() && k.Pattern.Glob() == old.Pattern.Glob() {
			return k
		}
	}
	return nil
}

func keyMoved(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		if p.new.DB.ID() != p.old.DB.ID() {
			r.at(p.new.Pos, keyEntry(p.new), "key %q moves from %s to %s: its data stays in %s, where nothing reads it", p.new.Name, p.old.DB.ID(), p.new.DB.ID(), p.old.DB.ID())
		}
	}
}

func keyPatternChanged(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		if og, ng := p.old.Pattern.Glob(), p.new.Pattern.Glob(); og != ng {
			r.at(p.new.Pos, keyEntry(p.new), "key %q has pattern %s, was %s: the names it makes changed (%s -> %s), and the data under the old names is stranded", p.new.Name, p.new.Pattern.Raw, p.old.Pattern.Raw, og, ng)
		}
	}
}

// sameShapeParams pairs the placeholders of two patterns that make the same
// names, segment by segment; nil when they do not.
func sameShapeParams(o, n keyspec.Pattern) [][2]*keyspec.Param {
	if o.Glob() != n.Glob() {
		return nil
	}
	var out [][2]*keyspec.Param
	for i, s := range o.Segments {
		if s.Param != nil && i < len(n.Segments) && n.Segments[i].Param != nil {
			out = append(out, [2]*keyspec.Param{s.Param, n.Segments[i].Param})
		}
	}
	return out
}

func placeholderNarrowed(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		for _, pp := range sameShapeParams(p.old.Pattern, p.new.Pattern) {
			if placeholderEncodingChanged(pp[0], pp[1]) != "" {
				continue
			}
			if why := paramNarrowed(pp[0], pp[1]); why != "" {
				r.at(pp[1].Pos, keyEntry(p.new), "key %q placeholder %s: %s: keys the previous release made with the values no longer accepted are out of reach", p.new.Name, pp[1].Name, why)
			}
		}
	}
}

func placeholderEncoding(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		for _, pp := range sameShapeParams(p.old.Pattern, p.new.Pattern) {
			if why := placeholderEncodingChanged(pp[0], pp[1]); why != "" {
				r.at(pp[1].Pos, keyEntry(p.new), "key %q placeholder %s %s, and the data under the previous names is stranded", p.new.Name, pp[1].Name, why)
			}
		}
	}
}

func valueTypeChanged(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		if gone := missing(p.old.Value, p.new.Value); len(gone) > 0 {
			r.at(p.new.Pos, keyEntry(p.new), "key %q holds %s, was %s: values of %s the previous release wrote do not read back (WRONGTYPE, or a decode error)", p.new.Name, values(p.new.Value), values(p.old.Value), strings.Join(gone, ", "))
		}
	}
}

func valueBoundLowered(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		o, n := p.old, p.new
		var why []string
		// A bound lowered; a bound declared where there was none is a new
		// rule of the key, not a lower one (value-type-changed tells a new type).
		if o.MaxBytes != 0 && n.MaxBytes != 0 && n.MaxBytes < o.MaxBytes {
			why = append(why, fmt.Sprintf("max_bytes %d -> %d", o.MaxBytes, n.MaxBytes))
		}
		if o.MaxLen != 0 && n.MaxLen != 0 && n.MaxLen < o.MaxLen {
			why = append(why, fmt.Sprintf("max_len %d -> %d", o.MaxLen, n.MaxLen))
		}
		if o.Retention != 0 && n.Retention != 0 && n.Retention < o.Retention {
			why = append(why, fmt.Sprintf("retention %s -> %s", dur(o.Retention), dur(n.Retention)))
		}
		if gone := missing(o.Fields, n.Fields); len(gone) > 0 && len(n.Fields) > 0 {
			why = append(why, "fields "+strings.Join(gone, ", ")+" gone")
		}
		if len(why) > 0 {
			r.at(n.Pos, keyEntry(n), "key %q: %s: values the previous release stored may exceed what the new release expects", n.Name, strings.Join(why, ", "))
		}
	}
}

// ---- data: TTLs ----

func durableMadeExpiring(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		if p.old.TTL.Rule == keyspec.TTLNone && p.new.TTL.Rule != keyspec.TTLNone {
			r.at(p.new.TTL.Pos, keyEntry(p.new), "key %q was durable (ttl: none: %s) and now expires (%s): data its callers keep as durable is dropped; the keys the previous release wrote keep no TTL until rewritten", p.new.Name, p.old.TTL.Reason, ttlText(p.new.TTL))
		}
	}
}

func expiringMadeDurable(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		if p.old.TTL.Rule != keyspec.TTLNone && p.new.TTL.Rule == keyspec.TTLNone {
			r.at(p.new.TTL.Pos, keyEntry(p.new), "key %q expired (%s) and is now durable: keys the previous release set still expire, keys set now never do (memory grows with the keyspace)", p.new.Name, ttlText(p.old.TTL))
		}
	}
}

func ttlRuleChanged(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		o, n := p.old.TTL, p.new.TTL
		if o.Rule != n.Rule && o.Rule != keyspec.TTLNone && n.Rule != keyspec.TTLNone {
			r.at(n.Pos, keyEntry(p.new), "key %q TTL rule %s -> %s (%s, was %s): keys expire on another schedule than the previous release sets and expects", p.new.Name, o.Rule, n.Rule, ttlText(n), ttlText(o))
		}
	}
}

// ttlBounds are the parts of a TTL that set how long a key lives, under one
// rule: the chosen value (fixed, heartbeat), the clamp (clamped), the jitter
// (window_jitter, whose window comes from the caller).
func ttlBounds(t keyspec.TTL) []ttlBound {
	switch t.Rule {
	case keyspec.TTLFixed, keyspec.TTLHeartbeat:
		return []ttlBound{{"value", t.Value}}
	case keyspec.TTLClamped:
		return []ttlBound{{"max", t.Max}}
	case keyspec.TTLWindowJitter:
		return []ttlBound{{"max_jitter", t.MaxJitter}}
	}
	return nil
}

type ttlBound struct {
	field string
	d     time.Duration
}

// lifetimeChanges lists each part of the TTL that moved in direction dir
// (-1 shorter, +1 longer), when the rule is the same.
func lifetimeChanges(o, n keyspec.TTL, dir int) []string {
	if o.Rule != n.Rule {
		return nil
	}
	ob, nb := ttlBounds(o), ttlBounds(n)
	var out []string
	for i := range ob {
		a, b := ob[i].d, nb[i].d
		if dir < 0 && b < a || dir > 0 && b > a {
			out = append(out, fmt.Sprintf("%s %s -> %s", ob[i].field, dur(a), dur(b)))
		}
	}
	return out
}

func ttlShortened(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		if ch := lifetimeChanges(p.old.TTL, p.new.TTL, -1); len(ch) > 0 {
			r.at(p.new.TTL.Pos, keyEntry(p.new), "key %q TTL shorter (%s, %s): entries expire sooner than the previous release expects", p.new.Name, p.new.TTL.Rule, strings.Join(ch, ", "))
		}
	}
}

func ttlLengthened(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		if ch := lifetimeChanges(p.old.TTL, p.new.TTL, +1); len(ch) > 0 {
			r.at(p.new.TTL.Pos, keyEntry(p.new), "key %q TTL longer (%s, %s): keys outlive what the previous release and the sizing assume", p.new.Name, p.new.TTL.Rule, strings.Join(ch, ", "))
		}
	}
}

func ttlBoundChanged(c *comparison, r *reporter) {
	for _, p := range c.presentKeys() {
		o, n := p.old.TTL, p.new.TTL
		if o.Rule != n.Rule {
			continue
		}
		var ch []string
		if o.Rule != keyspec.TTLClamped && o.Max != n.Max {
			ch = append(ch, fmt.Sprintf("max %s -> %s (%s)", dur(o.Max), dur(n.Max), direction(int64(o.Max), int64(n.Max), "raised", "lowered")))
		}
		if o.Exceeds != n.Exceeds {
			ch = append(ch, fmt.Sprintf("exceeds %s -> %s (%s)", dur(o.Exceeds), dur(n.Exceeds), direction(int64(o.Exceeds), int64(n.Exceeds), "raised", "lowered")))
		}
		if len(ch) > 0 {
			r.at(n.Pos, keyEntry(p.new), "key %q TTL bound moved: %s", p.new.Name, strings.Join(ch, ", "))
		}
	}
}

func direction(o, n int64, up, down string) string {
	switch {
	case o == 0:
		return "declared"
	case n == 0:
		return "dropped"
	case n > o:
		return up
	}
	return down
}

// ttlText is a TTL as the spec writes it.
func ttlText(t keyspec.TTL) string {
	switch t.Rule {
	case keyspec.TTLFixed, keyspec.TTLHeartbeat:
		return fmt.Sprintf("%s %s", t.Rule, dur(t.Value))
	case keyspec.TTLClamped:
		return fmt.Sprintf("clamped to %s", dur(t.Max))
	case keyspec.TTLWindowJitter:
		return fmt.Sprintf("window + at most %s", dur(t.MaxJitter))
	}
	return t.Rule
}
