// Package lint finds what keyspec.yaml and the Lua allow but Redis, least
// privilege or the spec's own declared rules do not: scripts whose commands
// cannot be read statically, globals Redis 7 refuses, a database its user cannot
// SELECT, multi-key scripts that Redis Cluster would refuse, a TTL outside its
// declared bounds, a stream or list write that does not trim, and whatever an
// instance's forbid rules forbid.
package lint

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
)

// Finding is one lint error, printed as FILE:LINE: rule: message.
type Finding struct {
	keyspec.Pos
	Rule string
	Msg  string
}

func (f Finding) String() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", f.File, f.Line, f.Rule, f.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", f.File, f.Rule, f.Msg)
}

// Rules, each with what it protects. The script-command rules are the
// compiler's own refusals (luagen generate refuses the same), reported by name.
const (
	RuleSpec             = "spec"                     // the spec does not parse or validate
	RuleLua              = compiler.RuleSignature     // a script does not load or does not match its signature
	RuleSelect           = "select"                   // a DB other than 0 that its user may not SELECT
	RuleCrossSlot        = "cross-slot"               // a multi-key script whose keys may not share a slot, with no reason given
	RuleDynamicCmd       = compiler.RuleDynamicCmd    // redis.call whose command is not a literal: no ACL can be derived
	RuleScriptSelect     = compiler.RuleScriptSelect  // a script calling SELECT
	RuleGlobal           = "global"                   // a global Redis 7 refuses to create or does not provide
	RuleTTLBound         = "ttl-bound"                // a chosen TTL above its key's declared max, or not above its declared floor (exceeds)
	RuleForbiddenKind    = "forbidden-kind"           // a key or script of a kind its instance forbids
	RuleACLOverlap       = "acl-overlap"              // a user's prefix reaching into another instance's prefixes
	RuleDangerous        = compiler.RuleDangerous     // a script calling a command no ACL grants (FLUSHALL, INFO, ...)
	RuleForbiddenName    = "forbidden-name"           // a key or script named for a kind its instance forbids, whatever its kind
	RuleCrossInstance    = "cross-instance"           // a script naming another instance's keys or channels
	RuleForbiddenShape   = "forbidden-shape"          // a script of a shape its instance forbids (get+increment)
	RuleForbiddenValue   = "forbidden-value"          // a key of a value type its instance forbids
	RuleForbiddenCommand = "forbidden-command"        // a script calling a command its instance forbids
	RuleForbiddenTTL     = "forbidden-ttl"            // a key that never expires (or never expires unbounded) where a forbid ttl rule says every key does
	RuleForbiddenBound   = "forbidden-unbounded"      // a stream or list without a declared bound where a forbid unbounded rule asks for one
	RuleStreamTrim       = "stream-trim"              // an XADD of a bounded stream without MAXLEN or MINID
	RuleListTrim         = "list-trim"                // a push onto a bounded list without an LTRIM of it in the same script
	RuleDeprecated       = "deprecated"               // a deprecated spec field (seed for source)
	RuleUnknownCmd       = compiler.RuleUnknownCmd    // a command or subcommand Redis does not have
	RuleNoScript         = compiler.RuleNoScript      // a command Redis refuses inside scripts (EVALSHA, SCRIPT, CLIENT, ...)
	RuleKeyless          = compiler.RuleKeyless       // a command on the whole server or database (DBSIZE, SCAN, ...)
	RuleCrossDB          = compiler.RuleCrossDB       // MOVE, SWAPDB, COPY ... DB n
	RuleArity            = compiler.RuleArity         // a call with a number of arguments Redis refuses
	RuleScriptKey        = compiler.RuleScriptKey     // a key position not filled from KEYS
	RuleKeysReadOnly     = compiler.RuleKeysWrite     // KEYS assigned or handed to code that may change it
	RuleArgvReadOnly     = compiler.RuleArgvWrite     // ARGV assigned or handed to code that may change it
	RuleInt64Arithmetic  = "int64-arithmetic"         // arithmetic (or tonumber) on an int64 ARGV, which Lua's doubles round past 2^53
	RuleScriptChannel    = compiler.RuleScriptChannel // a channel the script builds that no derived channel of it matches
	RuleShadow           = compiler.RuleShadow        // redis, KEYS or ARGV hidden or assigned
	RuleReplication      = compiler.RuleReplication   // redis.set_repl, redis.replicate_commands
	RuleShebang          = compiler.RuleShebang       // allow-oom
	RuleTTL              = compiler.RuleTTL           // a key created without its expiry, given one its rule does not allow, or one declared ttl none given one
	RuleBound            = compiler.RuleBound         // a trim keeping more than a list's or stream's max_len
	RuleChannel          = compiler.RuleChannel       // a PUBLISH to a channel the spec does not declare for the script
	RuleInclude          = compiler.RuleInclude       // an @include outside the Lua directory, a cycle, a missing file
	RuleTTLUnproven      = compiler.RuleTTLUnproven   // a key's expiry the static reading cannot tell (KEYS[i] in a loop, a key read before it is written)
	RuleBoundUnproven    = compiler.RuleBoundUnproven // a trim count the static reading cannot tell
	RuleFunctionBody     = compiler.RuleFunctionBody  // functions mode: Lua refuses the script as a function body (a top-level '...')
)

// Run lints a spec file's contents and the Lua directory. It never fails: a spec
// that does not parse is reported as findings of rule "spec".
func Run(file string, src []byte, lua fs.FS, luaDir string) []Finding {
	spec, err := keyspec.Parse(file, src)
	if err != nil {
		return fromErrors(RuleSpec, err)
	}
	var out []Finding
	srcs, problems := compiler.Check(spec, lua, luaDir)
	for _, p := range problems {
		msg := p.Err.Msg
		if p.Err.Entry != "" {
			msg = p.Err.Entry + ": " + msg
		}
		out = append(out, Finding{Pos: p.Err.Pos, Rule: p.Rule, Msg: msg})
	}
	if len(problems) > 0 {
		srcs = nil
	}
	out = append(out, Spec(spec)...)
	out = append(out, Scripts(spec, srcs)...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out
}

func fromErrors(rule string, err error) []Finding {
	var list keyspec.List
	switch e := err.(type) {
	case keyspec.List:
		list = e
	case *keyspec.Error:
		list = keyspec.List{e}
	default:
		return []Finding{{Rule: rule, Msg: err.Error()}}
	}
	out := make([]Finding, 0, len(list))
	for _, e := range list {
		msg := e.Msg
		if e.Entry != "" {
			msg = e.Entry + ": " + msg
		}
		out = append(out, Finding{Pos: e.Pos, Rule: rule, Msg: msg})
	}
	return out
}

// Spec runs the rules that need only the spec.
func Spec(spec *keyspec.Spec) []Finding {
	var out []Finding
	for _, d := range spec.Deprecated {
		out = append(out, Finding{Pos: d.Pos, Rule: RuleDeprecated, Msg: d.Msg})
	}
	for _, in := range spec.Instances {
		for _, d := range in.LiveDBs() {
			if d.Index != 0 && d.User != nil && !d.User.Select.Allow {
				out = append(out, Finding{Pos: d.Pos, Rule: RuleSelect, Msg: fmt.Sprintf(
					"db %s (%s) has index %d: a client must SELECT %d to reach it, but user %s may not SELECT; allow SELECT with a reason, or move the database to index 0 of its own instance",
					d.ID(), d.URLEnv, d.Index, d.Index, d.User.Name)})
			}
		}
		out = append(out, forbiddenNames(spec, in)...)
		for _, fb := range in.Forbid {
			for _, k := range spec.Keys {
				if k.DB == nil || k.DB.Instance != in {
					continue
				}
				if fb.Kind != "" && k.Kind == fb.Kind {
					out = append(out, Finding{Pos: k.Pos, Rule: RuleForbiddenKind, Msg: fmt.Sprintf("key %q is of kind %s, which %s forbids (%s)", k.Name, k.Kind, in.Name, fb.Source)})
				}
				if fb.Value != "" && k.Holds(fb.Value) {
					out = append(out, Finding{Pos: k.Pos, Rule: RuleForbiddenValue, Msg: fmt.Sprintf("key %q may hold a %s, which %s forbids (%s)", k.Name, fb.Value, in.Name, fb.Source)})
				}
				out = append(out, forbiddenExpiry(k, in, fb)...)
			}
			for _, s := range spec.Scripts {
				if s.Instance == in && fb.Kind != "" && s.Kind == fb.Kind {
					out = append(out, Finding{Pos: s.Pos, Rule: RuleForbiddenKind, Msg: fmt.Sprintf("script %q is of kind %s, which %s forbids (%s)", s.Name, s.Kind, in.Name, fb.Source)})
				}
			}
		}
	}
	for _, k := range spec.Keys {
		if !k.Live() {
			continue
		}
		t := k.TTL
		if t.Rule != keyspec.TTLFixed && t.Rule != keyspec.TTLHeartbeat {
			continue
		}
		if t.Max > 0 && t.Value > t.Max {
			out = append(out, Finding{Pos: t.Pos, Rule: RuleTTLBound, Msg: fmt.Sprintf("key %q: ttl value %s is above its declared max %s%s", k.Name, t.Value, t.Max, cite(k.Source))})
		}
		if t.Exceeds > 0 && t.Value <= t.Exceeds {
			out = append(out, Finding{Pos: t.Pos, Rule: RuleTTLBound, Msg: fmt.Sprintf("key %q: ttl value %s does not exceed its declared floor %s%s", k.Name, t.Value, t.Exceeds, cite(k.Source))})
		}
	}
	out = append(out, aclOverlaps(spec)...)
	for _, s := range spec.Scripts {
		if !s.Live() || len(s.Keys) < 2 || s.Instance.Topology == keyspec.TopologyCluster || s.CrossSlot != "" || s.SameSlot() {
			continue // a cluster instance's scripts are proven single-slot by the spec itself
		}
		var names []string
		for _, k := range s.Keys {
			names = append(names, k.Name)
		}
		out = append(out, Finding{Pos: s.Pos, Rule: RuleCrossSlot, Msg: fmt.Sprintf(
			"script %q takes %d KEYS (%s) that may be in different hash slots: atomic on standalone %s, CROSSSLOT on Redis Cluster; tie them with a hash tag and shared_placeholders, or say why this is settled in cross_slot",
			s.Name, len(s.Keys), strings.Join(names, ", "), s.Instance.Name)})
	}
	return out
}

// forbiddenExpiry is what a forbid ttl or unbounded rule finds in key k.
func forbiddenExpiry(k *keyspec.Key, in *keyspec.Instance, fb keyspec.Forbid) []Finding {
	who := in.Name
	if fb.SpecWide {
		who = "the spec"
	}
	at := k.TTL.Pos
	if at.Line == 0 {
		at = k.Pos
	}
	switch {
	case fb.TTL == keyspec.ForbidTTLNone && k.Expires() && k.TTL.Persist != "":
		return []Finding{{Pos: at, Rule: RuleForbiddenTTL, Msg: fmt.Sprintf("key %q may be kept without a TTL (ttl persist: %s), but %s says every key expires (%s): drop persist", k.Name, k.TTL.Persist, who, fb.Source)}}
	case fb.TTL == keyspec.ForbidTTLNone && !k.Expires():
		return []Finding{{Pos: at, Rule: RuleForbiddenTTL, Msg: fmt.Sprintf("key %q never expires (ttl none: %s), but %s says every key expires (%s): give it a TTL rule", k.Name, k.TTL.Reason, who, fb.Source)}}
	case fb.TTL == keyspec.ForbidTTLUnbounded && !k.Expires() && !k.Bounded():
		return []Finding{{Pos: at, Rule: RuleForbiddenTTL, Msg: fmt.Sprintf("key %q never expires and declares no bound the tool checks (a stream's max_len or retention, a list's max_len), which %s forbids (%s)", k.Name, who, fb.Source)}}
	case fb.Unbounded != "" && k.Holds(fb.Unbounded) && !unboundedOK(k, fb.Unbounded):
		want := "max_len"
		if fb.Unbounded == keyspec.ValueStream {
			want = "max_len or retention"
		}
		return []Finding{{Pos: k.Pos, Rule: RuleForbiddenBound, Msg: fmt.Sprintf("key %q may hold a %s and declares no bound (%s), which %s forbids (%s)", k.Name, fb.Unbounded, want, who, fb.Source)}}
	}
	return nil
}

// unboundedOK reports whether k declares the bound of value type v.
func unboundedOK(k *keyspec.Key, v string) bool {
	if v == keyspec.ValueStream {
		return k.MaxLen > 0 || k.Retention > 0
	}
	return k.MaxLen > 0
}

// cite is " (source: S)", or "" for an entry with no source.
func cite(source string) string {
	if source = strings.Join(strings.Fields(source), " "); source != "" {
		return " (source: " + source + ")"
	}
	return ""
}

// Scripts runs the rules that read the Lua.
func Scripts(spec *keyspec.Spec, srcs map[string]*compiler.Source) []Finding {
	var out []Finding
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		src := srcs[n]
		info := src.Info
		at := src.Position
		out = append(out, bounded(src)...)
		for _, u := range src.Unproven {
			out = append(out, Finding{Pos: u.Err.Pos, Rule: u.Rule, Msg: u.Err.Msg})
		}
		for _, c := range info.Calls {
			if fb := src.Script.Instance.ForbidsCommand(c.Command); fb != nil {
				out = append(out, Finding{Pos: at(c.Line), Rule: RuleForbiddenCommand, Msg: fmt.Sprintf("%s, which %s forbids (%s); luagen acl refuses to grant it", strings.ToUpper(c.Command), src.Script.Instance.Name, fb.Source)})
			}
		}
		for _, u := range spec.Users {
			if u.Instance == src.Script.Instance {
				continue
			}
			for _, p := range append(append([]*keyspec.Prefix{}, u.KeyPrefixes...), u.ChannelPrefixes...) {
				if p.Prefix == "" {
					continue // a whole deployment: no literal text to look for
				}
				if line := namesPrefix(src, p); line > 0 {
					out = append(out, Finding{Pos: at(line), Rule: RuleCrossInstance, Msg: fmt.Sprintf("names %s, a prefix of %s's user %s: scripts of %s name nothing of %s", p.Glob(), u.Instance.Name, u.Name, src.Script.Instance.Name, u.Instance.Name)})
				}
			}
		}
		for _, fb := range src.Script.Instance.Forbid {
			if fb.Shape != keyspec.ShapeGetIncrement || slices.Contains(fb.UnlessKind, src.Script.Kind) {
				continue
			}
			if line := getIncrement(info); line > 0 {
				out = append(out, Finding{Pos: at(line), Rule: RuleForbiddenShape, Msg: fmt.Sprintf("script %q reads and increments the same key, a get+increment shape, which %s forbids%s (%s)", src.Script.Name, src.Script.Instance.Name, unless(fb.UnlessKind), fb.Source)})
			}
		}
		out = append(out, int64Arithmetic(src)...)
		for _, g := range info.Globals {
			verb := "reads undefined global"
			if g.Write {
				verb = "creates global"
			}
			out = append(out, Finding{Pos: at(g.Line), Rule: RuleGlobal, Msg: fmt.Sprintf("%s %q: Redis 7 refuses it; use local", verb, g.Name)})
		}
	}
	return out
}

// aclOverlaps finds key or channel prefixes of a user that reach into the
// prefixes of another instance's users: one would see the other's keys if both
// instances were ever merged, and the ACLs would no longer say who owns what.
func aclOverlaps(spec *keyspec.Spec) []Finding {
	var out []Finding
	for _, u := range spec.Users {
		for _, o := range spec.Users {
			if u.Name >= o.Name || u.Instance == o.Instance || u.Instance == nil || o.Instance == nil {
				continue
			}
			if u.Instance.Prefix != nil || o.Instance.Prefix != nil {
				continue // names under a deployment prefix known only at run time
			}
			for _, kind := range []struct {
				name   string
				mine   []*keyspec.Prefix
				theirs []*keyspec.Prefix
			}{{"key", u.KeyPrefixes, o.KeyPrefixes}, {"channel", u.ChannelPrefixes, o.ChannelPrefixes}} {
				for _, p := range kind.mine {
					for _, q := range kind.theirs {
						if strings.HasPrefix(q.Prefix, p.Prefix) || strings.HasPrefix(p.Prefix, q.Prefix) && p.Prefix != q.Prefix && !q.Exact() {
							out = append(out, Finding{Pos: p.Pos, Rule: RuleACLOverlap, Msg: fmt.Sprintf(
								"%s prefix %s of user %s (%s) overlaps %s of user %s (%s)", kind.name, p.Glob(), u.Name, u.Instance.Name, q.Glob(), o.Name, o.Instance.Name)})
						}
					}
				}
			}
		}
	}
	return out
}

// namesPrefix is the line of the first call that passes, as a key or a
// channel, a name whose literal start lies under p (equals it, for a prefix
// naming one key); 0 when none does. Only such names reach another instance's
// keys: a hash field, a value or a local of the same spelling does not.
func namesPrefix(src *compiler.Source, p *keyspec.Prefix) int {
	under := func(text string) bool {
		if p.Exact() {
			return text == p.Prefix
		}
		return strings.HasPrefix(text, p.Prefix)
	}
	check := func(c luascript.Call, arg int) bool {
		if arg >= len(c.Args) {
			return false
		}
		for _, alt := range c.Args[arg].Alts {
			if len(alt.Parts) == 0 || alt.Parts[0].Kind != luascript.PartText {
				continue
			}
			// The literal start of the name (the whole name when it is a literal).
			if under(alt.Parts[0].Text) {
				return true
			}
		}
		return false
	}
	for i, c := range src.Info.Calls {
		for _, r := range src.Resolved {
			if r.Call == i && check(c, r.Arg) {
				return c.Line
			}
		}
		if (c.Command == "publish" || c.Command == "spublish") && check(c, 1) {
			return c.Line
		}
	}
	return 0
}

// forbiddenNames finds keys and scripts whose names speak of a kind the
// instance forbids, whatever kind they declare: a kind is a claim, a name is what
// operators and reviewers read. The words are each kind rule's kind and words.
func forbiddenNames(spec *keyspec.Spec, in *keyspec.Instance) []Finding {
	words := map[string]string{} // word -> forbidden kind
	for _, fb := range in.Forbid {
		if fb.Kind == "" {
			continue
		}
		words[strings.ToLower(fb.Kind)] = fb.Kind
		for _, w := range fb.Words {
			words[w] = fb.Kind
		}
	}
	if len(words) == 0 {
		return nil
	}
	named := func(name string) string {
		for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !(r >= 'a' && r <= 'z') }) {
			for word, kind := range words {
				if w == word || w == word+"s" || w == word+"es" {
					return kind
				}
			}
		}
		return ""
	}
	var out []Finding
	for _, k := range spec.Keys {
		if k.DB == nil || k.DB.Instance != in {
			continue
		}
		for _, pt := range k.Pattern.Parts {
			if kind := named(pt.Literal); pt.Param == nil && kind != "" {
				out = append(out, Finding{Pos: k.Pos, Rule: RuleForbiddenName, Msg: fmt.Sprintf("key %q: pattern %s names %s, a kind %s forbids", k.Name, k.Pattern.Raw, kind, in.Name)})
				break
			}
		}
	}
	for _, s := range spec.Scripts {
		if s.Instance == in {
			if kind := named(s.Name); kind != "" {
				out = append(out, Finding{Pos: s.Pos, Rule: RuleForbiddenName, Msg: fmt.Sprintf("script %q is named for %s, a kind %s forbids", s.Name, kind, in.Name)})
			}
		}
	}
	return out
}

func unless(kinds []string) string {
	if len(kinds) == 0 {
		return ""
	}
	return " except in scripts of kind " + strings.Join(kinds, ", ")
}

// pushCmds add elements to a list; LTRIM bounds it.
var pushCmds = map[string]bool{"lpush": true, "rpush": true, "lpushx": true, "rpushx": true, "linsert": true, "lmove": true, "rpoplpush": true}

// bounded checks the writes of bounded streams and lists: every XADD of a
// stream with max_len or retention trims it (MAXLEN or MINID), and every script
// pushing onto a list with max_len also LTRIMs it.
func bounded(src *compiler.Source) []Finding {
	var out []Finding
	s, info := src.Script, src.Info
	at := src.Position
	keysAt := func(pos int) []*keyspec.Key {
		if pos < 1 || pos > len(s.Keys) {
			return nil
		}
		return s.Keys[pos-1].OneOf
	}
	trimmed := map[int]bool{}
	for _, c := range info.Calls {
		if c.Command == "ltrim" && c.FirstKey > 0 {
			trimmed[c.FirstKey] = true
		}
	}
	for _, c := range info.Calls {
		switch {
		case c.Command == "xadd" && c.FirstKey > 0:
			for _, k := range keysAt(c.FirstKey) {
				if !k.Holds(keyspec.ValueStream) || (k.MaxLen == 0 && k.Retention == 0) {
					continue
				}
				if !slices.Contains(c.Literals, "maxlen") && !slices.Contains(c.Literals, "minid") {
					out = append(out, Finding{Pos: at(c.Line), Rule: RuleStreamTrim, Msg: fmt.Sprintf("XADD to KEYS[%d] (key %q, %s) without MAXLEN or MINID: every write of a bounded stream trims it", c.FirstKey, k.Name, streamBound(k))})
				}
				break
			}
		case pushCmds[c.Command]:
			for _, pos := range c.Keys {
				for _, k := range keysAt(pos) {
					if k.Holds(keyspec.ValueList) && k.MaxLen > 0 && !trimmed[pos] {
						out = append(out, Finding{Pos: at(c.Line), Rule: RuleListTrim, Msg: fmt.Sprintf("%s onto KEYS[%d] (key %q, max_len %d) and no LTRIM of it in the script: every write of a bounded list trims it", strings.ToUpper(c.Command), pos, k.Name, k.MaxLen)})
						break
					}
				}
			}
		}
	}
	return out
}

func streamBound(k *keyspec.Key) string {
	var parts []string
	if k.MaxLen > 0 {
		parts = append(parts, fmt.Sprintf("max_len %d", k.MaxLen))
	}
	if k.Retention > 0 {
		parts = append(parts, "retention "+k.Retention.String())
	}
	return strings.Join(parts, ", ")
}

var (
	readCmds = map[string]bool{"get": true, "hget": true, "hmget": true, "hgetall": true}
	incrCmds = map[string]bool{"incr": true, "incrby": true, "hincrby": true, "decr": true, "decrby": true}
)

// getIncrement is the line of an increment of a KEYS position the script also
// reads, the shape of a get+increment poll; 0 when there is none.
func getIncrement(info *luascript.Info) int {
	read := map[int]bool{}
	for _, c := range info.Calls {
		if readCmds[c.Command] {
			for _, k := range c.Keys {
				read[k] = true
			}
		}
	}
	for _, c := range info.Calls {
		if incrCmds[c.Command] {
			for _, k := range c.Keys {
				if read[k] {
					return c.Line
				}
			}
		}
	}
	return 0
}

// int64Arithmetic finds the int64 ARGV a script converts with tonumber or
// computes with: Lua's numbers are doubles, exact only up to 2^53, so such a
// value is rounded there while the wrapper sent it exactly. Passed through as
// text (a ZADD member, an id in a key), it stays exact and is not reported.
func int64Arithmetic(src *compiler.Source) []Finding {
	var out []Finding
	for _, n := range src.Info.Numeric {
		a := src.Script.ArgAt(n.Index)
		if a == nil || !a.Exact64() {
			continue
		}
		out = append(out, Finding{Pos: keyspec.Pos{File: src.Info.File, Line: n.Line}, Rule: RuleInt64Arithmetic, Msg: fmt.Sprintf(
			"ARGV[%d] %q is an int64, sent exactly, and the script computes with it (tonumber, arithmetic): Lua's numbers are doubles, exact only up to 2^53; declare it int (±(2^53-1)) if it stays in that range, or keep it as text", n.Index, a.Name)})
	}
	return out
}
