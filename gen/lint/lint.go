// Package lint finds what keyspec.yaml and the Lua allow but the seeds, Redis or
// least privilege do not: the contradictions the spec must settle openly, scripts
// whose commands cannot be read statically, globals Redis 7 refuses, a legacy TTL
// shorter than its budget, state an instance forbids.
package lint

import (
	"fmt"
	"io/fs"
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
	RuleSpec          = "spec"                    // the spec does not parse or validate
	RuleLua           = compiler.RuleSignature    // a script does not load or does not match its signature
	RuleSelect        = "select"                  // CONTRADICTION 2: a DB other than 0 that its user may not SELECT
	RuleCrossSlot     = "cross-slot"              // CONTRADICTION 3: a multi-key script whose keys cannot share a slot
	RuleDynamicCmd    = compiler.RuleDynamicCmd   // redis.call whose command is not a literal: no ACL can be derived
	RuleScriptSelect  = compiler.RuleScriptSelect // a script calling SELECT
	RuleGlobal        = "global"                  // a global Redis 7 refuses to create or does not provide
	RuleLegacyBudget  = "legacy-budget"           // a legacy stub key that expires within its poll/recovery budget
	RuleForbiddenKind = "forbidden-kind"          // a key or script of a kind its instance forbids
	RuleACLOverlap    = "acl-overlap"             // a user's prefix reaching into another instance's prefixes
	RuleDangerous     = compiler.RuleDangerous    // a script calling a command no ACL grants (FLUSHALL, INFO, ...)
	RuleForbiddenName = "forbidden-name"          // a key or script named for state its instance forbids, whatever its kind
	RuleCrossInstance = "cross-instance"          // a script naming another instance's keys or channels
	RulePollShape     = "poll-shape"              // a get+increment of one key where task polls are forbidden
	RuleUnknownCmd    = compiler.RuleUnknownCmd   // a command or subcommand Redis does not have
	RuleNoScript      = compiler.RuleNoScript     // a command Redis refuses inside scripts (EVALSHA, SCRIPT, CLIENT, ...)
	RuleKeyless       = compiler.RuleKeyless      // a command on the whole server or database (DBSIZE, SCAN, ...)
	RuleCrossDB       = compiler.RuleCrossDB      // MOVE, SWAPDB, COPY ... DB n
	RuleArity         = compiler.RuleArity        // a call with a number of arguments Redis refuses
	RuleScriptKey     = compiler.RuleScriptKey    // a key position not filled from KEYS
	RuleKeysReadOnly  = compiler.RuleKeysWrite    // KEYS assigned or handed to code that may change it
	RuleShadow        = compiler.RuleShadow       // redis, KEYS or ARGV hidden or assigned
	RuleReplication   = compiler.RuleReplication  // redis.set_repl, redis.replicate_commands
	RuleShebang       = compiler.RuleShebang      // allow-oom
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
	for _, in := range spec.Instances {
		for _, d := range in.LiveDBs() {
			if d.Index != 0 && d.User != nil && !d.User.Select.Allow {
				out = append(out, Finding{Pos: d.Pos, Rule: RuleSelect, Msg: fmt.Sprintf(
					"db %s (%s) has index %d: a client must SELECT %d to reach it, but user %s may not SELECT; allow SELECT with a reason, or move the database to index 0 of its own instance",
					d.ID(), d.URLEnv, d.Index, d.Index, d.User.Name)})
			}
			if d.Legacy != nil {
				budget := d.Legacy.PollBudget + d.Legacy.RecoveryBudget
				for _, k := range spec.Keys {
					if k.DB != d {
						continue
					}
					switch {
					case k.TTL.Rule != keyspec.TTLFixed && k.TTL.Rule != keyspec.TTLHeartbeat:
						out = append(out, Finding{Pos: k.TTL.Pos, Rule: RuleLegacyBudget, Msg: fmt.Sprintf(
							"key %q has a %s TTL in legacy %s: only a fixed or heartbeat TTL can be shown to outlast the poll/recovery budget", k.Name, k.TTL.Rule, d.ID())})
					case k.TTL.Value <= budget:
						out = append(out, Finding{Pos: k.TTL.Pos, Rule: RuleLegacyBudget, Msg: fmt.Sprintf(
							"key %q expires after %s, within the poll/recovery budget %s of %s (poll %s + recovery %s): seed 000 §7 wants the task TTL above it",
							k.Name, k.TTL.Value, budget, d.ID(), d.Legacy.PollBudget, d.Legacy.RecoveryBudget)})
					}
				}
			}
		}
		out = append(out, forbiddenNames(spec, in)...)
		for _, fb := range in.Forbid {
			for _, k := range spec.Keys {
				if k.DB != nil && k.DB.Instance == in && k.Kind == fb.Kind {
					out = append(out, Finding{Pos: k.Pos, Rule: RuleForbiddenKind, Msg: fmt.Sprintf("key %q holds %s state, which %s forbids (%s)", k.Name, k.Kind, in.Name, fb.Seed)})
				}
			}
			for _, s := range spec.Scripts {
				if s.Instance == in && s.Kind == fb.Kind {
					out = append(out, Finding{Pos: s.Pos, Rule: RuleForbiddenKind, Msg: fmt.Sprintf("script %q is a %s script, which %s forbids (%s)", s.Name, s.Kind, in.Name, fb.Seed)})
				}
			}
		}
	}
	out = append(out, aclOverlaps(spec)...)
	for _, s := range spec.Scripts {
		if !s.Live() || len(s.Keys) < 2 {
			continue
		}
		var names []string
		for _, k := range s.Keys {
			names = append(names, k.Name)
		}
		switch {
		case s.Instance.Topology == "cluster":
			out = append(out, Finding{Pos: s.Pos, Rule: RuleCrossSlot, Msg: fmt.Sprintf(
				"script %q takes %d KEYS (%s) on cluster instance %s: their patterns share no hash tag, so Redis Cluster answers CROSSSLOT",
				s.Name, len(s.Keys), strings.Join(names, ", "), s.Instance.Name)})
		case s.CrossSlot == "":
			out = append(out, Finding{Pos: s.Pos, Rule: RuleCrossSlot, Msg: fmt.Sprintf(
				"script %q takes %d KEYS (%s) in different hash slots: atomic on standalone %s, CROSSSLOT on Redis Cluster; say why this is settled in cross_slot",
				s.Name, len(s.Keys), strings.Join(names, ", "), s.Instance.Name)})
		}
	}
	return out
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
		at := func(line int) keyspec.Pos { return keyspec.Pos{File: info.File, Line: line} }
		for _, u := range spec.Users {
			if u.Instance == src.Script.Instance {
				continue
			}
			for _, p := range append(append([]*keyspec.Prefix{}, u.KeyPrefixes...), u.ChannelPrefixes...) {
				if line := lineOf(src.Src, p.Prefix); line > 0 {
					out = append(out, Finding{Pos: at(line), Rule: RuleCrossInstance, Msg: fmt.Sprintf("names %s, a prefix of %s's user %s: scripts of %s name nothing of %s", p.Glob(), u.Instance.Name, u.Name, src.Script.Instance.Name, u.Instance.Name)})
				}
			}
		}
		if src.Script.Kind != "rate_limit" && forbids(src.Script.Instance, "task_poll") {
			if line := getIncrement(info); line > 0 {
				out = append(out, Finding{Pos: at(line), Rule: RulePollShape, Msg: fmt.Sprintf("script %q reads and increments the same key: a get+increment poll, which %s forbids (declare kind rate_limit if it is a limiter)", src.Script.Name, src.Script.Instance.Name)})
			}
		}
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

// lineOf is the 1-based line of the first occurrence of s in src, or 0.
func lineOf(src []byte, s string) int {
	i := strings.Index(string(src), s)
	if i < 0 {
		return 0
	}
	return strings.Count(string(src[:i]), "\n") + 1
}

// forbiddenNames finds keys and scripts whose names speak of state the instance
// forbids (task, lease, lock; poll for task_poll), whatever kind they declare:
// a kind is a claim, a name is what operators and reviewers read.
func forbiddenNames(spec *keyspec.Spec, in *keyspec.Instance) []Finding {
	words := map[string]string{} // word -> forbidden kind
	for _, fb := range in.Forbid {
		switch fb.Kind {
		case "task_poll":
			words["poll"] = fb.Kind
		default:
			words[fb.Kind] = fb.Kind
		}
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
		for _, seg := range k.Pattern.Segments {
			if kind := named(seg.Literal); seg.Param == nil && kind != "" {
				out = append(out, Finding{Pos: k.Pos, Rule: RuleForbiddenName, Msg: fmt.Sprintf("key %q: pattern %s names %s state, which %s forbids", k.Name, k.Pattern.Raw, kind, in.Name)})
				break
			}
		}
	}
	for _, s := range spec.Scripts {
		if s.Instance == in {
			if kind := named(s.Name); kind != "" {
				out = append(out, Finding{Pos: s.Pos, Rule: RuleForbiddenName, Msg: fmt.Sprintf("script %q is named for %s, which %s forbids", s.Name, kind, in.Name)})
			}
		}
	}
	return out
}

func forbids(in *keyspec.Instance, kind string) bool {
	for _, f := range in.Forbid {
		if f.Kind == kind {
			return true
		}
	}
	return false
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
