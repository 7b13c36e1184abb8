package keyspec

import (
	"fmt"
	"strings"
)

// Derived is a key or a channel a script builds inside itself rather than
// taking it in KEYS: from an anchor (the key passed in one of its KEYS
// positions, or the pattern's own literal start) followed by parts the pattern
// allows (`KEYS[1] .. ':' .. job_id`, `'events:' .. topic`). The script reader
// proves every such name is its anchor followed by the pattern's parts; the
// ACL grants it through its owner's prefix like any declared key, and on a
// cluster instance the anchor carries the whole hash tag, so the derived key
// lands in the anchor's slot.
type Derived struct {
	Pos
	Key     *Key     // the declared key it builds; nil for a channel
	Channel *Channel // the declared channel it builds; nil for a key
	// From is the KEYS position (1-based) whose key the name starts with; 0:
	// the name starts with the pattern's literal text, or FromArgv's.
	From int
	// FromArgv is the ARGV position (1-based) of type key the name starts with.
	FromArgv int
	// FromData (from: data) is a key whose name the script reads whole from
	// data (a hash field, a list, a decoded argument) or builds from such a
	// name: no anchor bounds it before the run. The ACL grants its pattern and
	// nothing wider, so Redis refuses any other name; the test harness checks
	// every key the script touches against its patterns. Refused on a cluster
	// instance: a name read from data may be in any slot.
	FromData bool
	Reason   string // why the script builds it rather than taking it in KEYS
}

// Name is the declared key's or channel's name.
func (d *Derived) Name() string {
	if d.Key != nil {
		return d.Key.Name
	}
	if d.Channel != nil {
		return d.Channel.Name
	}
	return ""
}

// Pattern is the pattern of the name it builds.
func (d *Derived) Pattern() Pattern {
	if d.Key != nil {
		return d.Key.Pattern
	}
	if d.Channel != nil {
		return d.Channel.Pattern
	}
	return Pattern{}
}

// Anchor is the KEYS position it is built from, or nil.
func (d *Derived) Anchor(s *Script) *ScriptKey {
	if d.From < 1 || d.From > len(s.Keys) {
		return nil
	}
	return s.Keys[d.From-1]
}

// anchorKeys are the keys the name may start with, and how errors name the
// anchor: the keys a KEYS position takes, or an ARGV key's one key.
func (d *Derived) anchorKeys(s *Script) ([]*Key, string) {
	if a := d.Anchor(s); a != nil {
		return a.OneOf, fmt.Sprintf("KEYS[%d] %q", d.From, a.Name)
	}
	if d.FromArgv >= 1 && d.FromArgv <= len(s.Argv) && s.Argv[d.FromArgv-1].Key != nil {
		return []*Key{s.Argv[d.FromArgv-1].Key}, fmt.Sprintf("ARGV[%d] %q", d.FromArgv, s.Argv[d.FromArgv-1].Name)
	}
	return nil, ""
}

// DerivedFromData is the from of a derived key whose name the script reads from
// data rather than builds from an anchor (from: data).
const DerivedFromData = "data"

type rawDerived struct {
	Key     string `yaml:"key"`
	Channel string `yaml:"channel"`
	From    string `yaml:"from"`
	Reason  string `yaml:"reason"`
}

// scriptDerived resolves a script's derived keys and channels.
func (p *parser) scriptDerived(path, entry string, s *Script, raw []rawDerived) {
	seen := map[string]bool{}
	for i, r := range raw {
		dp := fmt.Sprintf("%s.derived[%d]", path, i)
		d := &Derived{Pos: p.pos(dp), Reason: strings.TrimSpace(r.Reason)}
		dentry := fmt.Sprintf("%s derived[%d]", entry, i)
		switch {
		case (r.Key == "") == (r.Channel == ""):
			p.errf(dp, dentry, "set exactly one of key and channel: the declared key or channel the script builds")
			continue
		case r.Key != "":
			dentry = fmt.Sprintf("%s derived key %q", entry, r.Key)
			if d.Key = p.keys[r.Key]; d.Key == nil {
				p.errf(dp, dentry, "key %q is not declared", r.Key)
				continue
			}
			if s.Instance != nil && d.Key.DB != nil && d.Key.DB.Instance != s.Instance {
				p.errf(dp, dentry, "key %q lives on instance %s, the script on %s", r.Key, d.Key.DB.Instance.Name, s.Instance.Name)
				continue
			}
			if s.DB != nil && d.Key.DB != nil && d.Key.DB != s.DB {
				p.errf(dp, dentry, "key %q lives in %s, the script's KEYS in %s: a script runs in one database", r.Key, d.Key.DB.ID(), s.DB.ID())
				continue
			}
		default:
			dentry = fmt.Sprintf("%s derived channel %q", entry, r.Channel)
			for _, c := range p.spec.Channels {
				if c.Name == r.Channel {
					d.Channel = c
				}
			}
			if d.Channel == nil {
				p.errf(dp, dentry, "channel %q is not declared", r.Channel)
				continue
			}
			if s.Instance != nil && d.Channel.Instance != s.Instance {
				p.errf(dp, dentry, "channel %q is on instance %s, the script on %s", r.Channel, d.Channel.Instance.Name, s.Instance.Name)
				continue
			}
		}
		if r.From == DerivedFromData {
			for _, k := range s.Keys {
				if k.Name == DerivedFromData {
					p.errf(dp+".from", dentry, "from %q declares a name read from data, and the script has a KEYS position of that name: rename the position", DerivedFromData)
				}
			}
			if d.Channel != nil {
				p.errf(dp+".from", dentry, "from data declares a key whose name the script reads from data; a channel the script publishes to is a derived channel from its literal start, or a channel passed in KEYS or ARGV")
				continue
			}
			d.FromData = true
		} else if r.From != "" {
			for j, k := range s.Keys {
				if k.Name == r.From {
					d.From = j + 1
				}
			}
			for j, a := range s.Argv {
				if a.Name == r.From && a.Type == ArgKey && d.From == 0 {
					d.FromArgv = j + 1
				}
			}
			if d.From == 0 && d.FromArgv == 0 {
				p.errf(dp+".from", dentry, "from %q is not one of the script's KEYS positions (%s) nor an ARGV of type key", r.From, keyNames(s))
				continue
			}
		}
		id := d.Name() + "@" + r.From
		if seen[id] {
			p.errf(dp, dentry, "declared twice")
			continue
		}
		seen[id] = true
		p.checkDerived(dp, dentry, s, d)
		s.Derived = append(s.Derived, d)
	}
}

func keyNames(s *Script) string {
	var names []string
	for _, k := range s.Keys {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// checkDerived: a derived name starts with its anchor's pattern, the anchor's
// placeholders mean the same in both, and on a cluster the anchor holds the
// whole hash tag.
func (p *parser) checkDerived(dp, dentry string, s *Script, d *Derived) {
	pat := d.Pattern()
	if pat.Parts == nil {
		return // its own error is reported
	}
	cluster := s.Instance != nil && s.Instance.Topology == TopologyCluster
	if d.FromData {
		if cluster {
			p.errf(dp, dentry, "on cluster instance %s a key whose name the script reads from data may be in any slot, and Redis Cluster refuses a key outside the slot of the script's KEYS (CROSSSLOT): pass the key in KEYS, or store only the id and build the name from a KEYS anchor (from: <position>) that holds the hash tag", s.Instance.Name)
		}
		return
	}
	anchors, anchorName := d.anchorKeys(s)
	if anchors == nil {
		if d.Key != nil && cluster && !sameLiteralTag(s, pat) {
			p.errf(dp, dentry, "on cluster instance %s a key built from its own literal start has no hash tag tying it to the script's KEYS (CROSSSLOT): build it from a KEYS position whose key holds the tag (from: <position>), or give it the literal tag every KEYS key has", s.Instance.Name)
		}
		if d.Key != nil && pat.LiteralPrefix() == "" {
			p.errf(dp, dentry, "pattern %q starts with a placeholder: a key built without an anchor must start with literal text", pat.Raw)
		}
		return
	}
	for _, a := range anchors {
		if a.Pattern.Parts == nil {
			continue
		}
		rest, ok := AnchorTail(a.Pattern, pat)
		if !ok {
			p.errf(dp, dentry, "pattern %q does not start with %q, the pattern of key %q that %s takes: a derived name is its anchor followed by more", pat.Raw, a.Pattern.Raw, a.Name, anchorName)
			continue
		}
		if rest == "" {
			p.errf(dp, dentry, "pattern %q is the anchor's own pattern (key %q): take it in KEYS", pat.Raw, a.Name)
			continue
		}
		// The anchor's placeholders are the derived pattern's first ones, in
		// order (their names may differ): the anchor's values are the derived
		// key's, so both declare them alike.
		dparams := pat.Params()
		for i, ap := range a.Pattern.Params() {
			dp2 := dparams[i]
			if dp2.Type != ap.Type || dp2.Encode != ap.Encode || dp2.Enum != ap.Enum || dp2.Len != ap.Len || dp2.MaxLen != ap.MaxLen || dp2.Min != ap.Min || dp2.Max != ap.Max {
				p.errf(dp, dentry, "placeholder {%s} is a %s in key %q and {%s} a %s in the anchor %q: the anchor's value is the derived key's, so both declare it alike", dp2.Name, describeParam(dp2), d.Name(), ap.Name, describeParam(ap), a.Name)
			}
		}
		if cluster && d.Key != nil && !a.Pattern.HasTag() {
			p.errf(dp, dentry, "on cluster instance %s the anchor key %q has no hash tag: a key built from it can land in another slot than the script's KEYS (CROSSSLOT); put the slot's placeholder in a hash tag in %q (\"{{id}}\") so every name built from it shares its slot", s.Instance.Name, a.Name, a.Pattern.Raw)
		}
	}
}

// AnchorTail is what follows the anchor's pattern at the start of pat, in
// pattern text without placeholder names (":{}:lock" for "q:{id}" and
// "q:{id}:{job_id}:lock"), and whether pat starts with the anchor at all: the
// same literal text, and placeholders in the same places (their names may
// differ).
func AnchorTail(anchor, pat Pattern) (string, bool) {
	a, d := patternText(anchor, false), patternText(pat, false)
	if !strings.HasPrefix(d, a) {
		return "", false
	}
	return d[len(a):], true
}

// patternText is the pattern's name written back from its parts, with the
// placeholders' names or (named false) without them.
func patternText(p Pattern, named bool) string {
	var b strings.Builder
	for _, pt := range p.Parts {
		switch {
		case pt.Param == nil:
			b.WriteString(pt.Literal)
		case named:
			b.WriteString("{" + pt.Param.Name + "}")
		default:
			b.WriteString("{}")
		}
	}
	return b.String()
}

// sameLiteralTag reports whether pat's hash tag is literal text (its names are
// all in one slot) that every key of the script's KEYS positions has too.
func sameLiteralTag(s *Script, pat Pattern) bool {
	tag, ok := pat.TagText()
	if !ok {
		return false
	}
	for _, pos := range s.Keys {
		for _, k := range pos.OneOf {
			if t, ok := k.Pattern.TagText(); !ok || t != tag {
				return false
			}
		}
	}
	return true
}

// Reach are the declared keys a script may touch: those its KEYS positions take,
// those passed in ARGV (type key) and those it builds (Derived).
func (s *Script) Reach() []*Key {
	var out []*Key
	seen := map[*Key]bool{}
	for _, pos := range s.Keys {
		for _, k := range pos.OneOf {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	for _, a := range s.Argv {
		if a.Key != nil && !seen[a.Key] {
			seen[a.Key] = true
			out = append(out, a.Key)
		}
	}
	for _, d := range s.Derived {
		if d.Key != nil && !seen[d.Key] {
			seen[d.Key] = true
			out = append(out, d.Key)
		}
	}
	return out
}

// ValuePrefix is the value type of a prefix key: a namespace a script is
// passed in KEYS ("q:{{queue}}:", the caller's prefix for a queue's keys) to
// build derived keys from. No value is stored under it, it has no TTL, and its
// pattern ends with ':'.
const ValuePrefix = "prefix"

// Prefix reports whether the key is a prefix key (value: [prefix]).
func (k *Key) Prefix() bool { return len(k.Value) == 1 && k.Value[0] == ValuePrefix }

// prefixKey resolves a prefix key's pattern (its text up to the final ':',
// followed by an empty segment, so that builders write the ':') and checks
// what a prefix key may not have. It reports whether r declares one.
func (p *parser) prefixKey(path, entry string, k *Key, r rawKey) bool {
	prefix := false
	for _, v := range r.Value {
		if v == ValuePrefix {
			prefix = true
		}
	}
	if !prefix {
		return false
	}
	if len(r.Value) > 1 {
		p.errf(path+".value", entry, "a prefix key holds no value: value is [prefix] alone")
	}
	if r.TTL != nil {
		p.errf(path+".ttl", entry, "a prefix key holds no value and has no TTL: drop ttl")
	}
	if len(r.Fields) > 0 || r.MaxLen != 0 || r.MaxBytes != 0 || r.Retention != "" {
		p.errf(path, entry, "a prefix key holds no value: fields, max_len, max_bytes and retention do not apply")
	}
	k.TTL = TTL{Pos: k.Pos, Rule: TTLNone, Reason: "a prefix key: no value is stored under it"}
	raw := r.Pattern
	if !strings.HasSuffix(raw, ":") || strings.HasSuffix(raw, "::") {
		p.errf(path+".pattern", entry, "pattern %q: a prefix key's pattern ends with one ':' (\"q:{{queue}}:\"), the separator the names built from it follow", raw)
		return true
	}
	pat := p.pattern(path, entry, strings.TrimSuffix(raw, ":"), r.Params)
	if pat.Parts != nil {
		pat.Raw = raw
		if n := len(pat.Parts); pat.Parts[n-1].Param == nil {
			pat.Parts[n-1].Literal += ":"
		} else {
			pat.Parts = append(pat.Parts, Part{Literal: ":"})
		}
		if pat.Segments != nil {
			pat.Segments = append(pat.Segments, Segment{})
		}
	}
	k.Pattern = pat
	return true
}

// rawArgKeys are the declared keys of a script's ARGV of type key, before
// they are parsed (shared placeholders count them).
func (p *parser) rawArgKeys(raw []rawArg) []*Key {
	var out []*Key
	for _, ra := range raw {
		if ra.Type == ArgKey && p.keys[ra.Key] != nil {
			out = append(out, p.keys[ra.Key])
		}
	}
	return out
}

// argKey resolves an ARGV of type key: the declared key whose name the wrapper
// builds and passes in ARGV (a prefix the script builds keys from). Redis
// Cluster routes a call by its KEYS alone, so on a cluster instance the key's
// hash tag must be the KEYS' own: of one signature with theirs, each
// placeholder in it shared (the wrapper makes the values equal) or the tag
// literal text every KEYS key has.
func (p *parser) argKey(ap, aentry string, s *Script, a *Arg, ra rawArg) {
	if ra.Optional {
		p.errf(ap, aentry, "an ARGV of type key is never optional: the names built from it need it")
	}
	if ra.Key == "" {
		p.errf(ap, aentry, "type key names the declared key it carries: key: <name>")
		return
	}
	k := p.keys[ra.Key]
	switch {
	case k == nil:
		p.errf(ap, aentry, "key %q is not declared", ra.Key)
		return
	case s.Instance != nil && k.DB != nil && k.DB.Instance != s.Instance:
		p.errf(ap, aentry, "key %q lives on instance %s, the script on %s", ra.Key, k.DB.Instance.Name, s.Instance.Name)
		return
	case s.DB != nil && k.DB != nil && k.DB != s.DB:
		p.errf(ap, aentry, "key %q lives in %s, the script's KEYS in %s: a script runs in one database", ra.Key, k.DB.ID(), s.DB.ID())
		return
	case s.Instance != nil && s.Instance.Topology == TopologyCluster:
		if why := argKeySlot(s, k); why != "" {
			p.errf(ap, aentry, "on cluster instance %s a key passed in ARGV is not routed by Redis Cluster: %s (CROSSSLOT), or pass it in KEYS", s.Instance.Name, why)
			return
		}
	}
	a.Key = k
}

// argKeySlot says why key k, passed in ARGV, may not share the slot of the
// script's KEYS on a cluster; "" when it must: the script takes KEYS (Redis
// routes by them), every KEYS key and k have a hash tag of one signature, and
// each placeholder of k's tag is shared, so the wrapper makes it the KEYS'
// value (a tag of literal text is the same everywhere).
func argKeySlot(s *Script, k *Key) string {
	if !k.Pattern.HasTag() {
		return fmt.Sprintf("key %q has no hash tag, so the names built from it can land in another slot than the script's KEYS; give it the KEYS' tag (\"{{id}}\") and share its placeholder (shared_placeholders)", k.Name)
	}
	sig := k.Pattern.TagSignature()
	routed := false
	for _, pos := range s.Keys {
		for _, kk := range pos.OneOf {
			routed = true
			if kk.Pattern.TagSignature() != sig {
				return fmt.Sprintf("key %q's hash tag is not that of key %q, which the script takes in KEYS (%s)", k.Name, kk.Name, pos.Name)
			}
		}
	}
	if !routed {
		return "the script takes no key in KEYS, which Redis routes by"
	}
	shared := map[string]bool{}
	for _, n := range s.SharedPlaceholders {
		shared[n] = true
	}
	for _, t := range k.Pattern.Tag() {
		if t.Param != nil && !shared[t.Param.Name] {
			return fmt.Sprintf("placeholder {%s} of key %q's hash tag is not shared with the KEYS: list it under shared_placeholders, so the wrapper makes the values equal", t.Param.Name, k.Name)
		}
	}
	return ""
}
