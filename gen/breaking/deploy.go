package breaking

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
)

// ---- rolling deploy: instances ----

func instanceModeChanged(c *comparison, r *reporter) {
	for _, p := range changed(c.instances(), func(in *keyspec.Instance) string { return in.Mode }) {
		r.at(p.new.Pos, instanceEntry(p.new.Name), "instance %q runs its scripts by %s, was %s: processes of the previous release call them by %s, which the new deploy no longer provides (and their user no longer gets)", p.new.Name, p.new.Mode, p.old.Mode, sentBy(p.old, "FCALL of the library's functions", "EVALSHA"))
	}
}

// sentBy is how the instance's scripts are sent: functions in functions mode,
// eval otherwise.
func sentBy(in *keyspec.Instance, functions, eval string) string {
	if in.Functions() {
		return functions
	}
	return eval
}

func dbURLEnvChanged(c *comparison, r *reporter) {
	for _, p := range changed(present(c.dbs()), func(d *keyspec.DB) string { return d.URLEnv }) {
		r.at(p.new.Pos, dbEntry(p.new), "database %s is reached through %s, was %s: every deployment must set %s before the new release starts", p.new.ID(), p.new.URLEnv, p.old.URLEnv, p.new.URLEnv)
	}
}

func legacyCutOver(c *comparison, r *reporter) {
	for _, p := range c.dbs() {
		if p.new == nil || p.new.Live() {
			continue
		}
		var keys, scripts []string
		for _, k := range c.old.Spec.Keys {
			if k.Live() && k.DB.ID() == p.old.ID() {
				keys = append(keys, k.Name)
			}
		}
		for _, s := range c.old.Spec.Scripts {
			if s.Live() && s.DB != nil && s.DB.ID() == p.old.ID() {
				scripts = append(scripts, s.Name)
			}
		}
		r.at(p.new.Pos, dbEntry(p.new), "legacy database %s is cut over: keys %s and scripts %s go with it, and its ACL grants; the previous release must have stopped using them (and the cutover deleted its data)", p.new.ID(), orNone(keys), orNone(scripts))
	}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// ---- rolling deploy: scripts ----

func scriptRemoved(c *comparison, r *reporter) {
	for _, p := range c.scripts() {
		if p.new != nil && p.new.Live() || p.old.DB != nil && c.cutOver(p.old.DB) || c.new.Spec.Instance(p.old.Instance.Name) == nil {
			continue
		}
		how := "callers of the previous release still send it by EVALSHA, and recover NOSCRIPT by loading their copy only while the loader and the aclfile still allow what it runs"
		if p.old.Instance.Functions() {
			how = "FUNCTION LOAD REPLACE of the new library removes its function, and callers of the previous release get ErrNoFunction"
		}
		r.at(p.old.Pos, scriptEntry(p.old), "script %q is gone: %s", p.old.Name, how)
	}
}

// positionChanges describes, index by index, how the positions of one table
// (KEYS or ARGV) of a script changed from olds to news, each named by name:
// a position gone, or whose index now holds another position while the new
// list has its name elsewhere (reordered: then replaced, when not nil, is
// told the new position), and what kept says of any other position.
func positionChanges[P any](table string, olds, news []P, name func(P) string, replaced func(n P), kept func(i int, o, n P) []string) []string {
	var newNames []string
	for _, n := range news {
		newNames = append(newNames, name(n))
	}
	var why []string
	for i, o := range olds {
		on := name(o)
		if i >= len(news) {
			why = append(why, fmt.Sprintf("%s[%d] %s removed%s", table, i+1, on, moved(on, newNames)))
			continue
		}
		n := news[i]
		if nn := name(n); nn != on && slices.Contains(newNames, on) {
			why = append(why, fmt.Sprintf("%s[%d] is %s, was %s%s", table, i+1, nn, on, moved(on, newNames)))
			if replaced != nil {
				replaced(n)
			}
			continue
		}
		why = append(why, kept(i, o, n)...)
	}
	return why
}

// moved says where name went: " (now at position 3)", or "".
func moved(name string, names []string) string {
	if i := slices.Index(names, name); i >= 0 {
		return fmt.Sprintf(" (now position %d: reordered)", i+1)
	}
	return ""
}

func scriptKeysChanged(c *comparison, r *reporter) {
	for _, p := range c.presentScripts() {
		o, n := p.old, p.new
		why := positionChanges("KEYS", o.Keys, n.Keys, func(k *keyspec.ScriptKey) string { return k.Name }, nil,
			func(i int, ok, nk *keyspec.ScriptKey) (why []string) {
				for _, k := range ok.OneOf {
					if !accepts(nk, k) {
						why = append(why, fmt.Sprintf("KEYS[%d] %s no longer accepts key %s", i+1, nk.Name, k.Name))
					}
				}
				return why
			})
		for i := len(o.Keys); i < len(n.Keys); i++ {
			if n.Keys[i].Count().Min > 0 {
				why = append(why, fmt.Sprintf("KEYS[%d] %s added: callers of the previous release pass %d", i+1, n.Keys[i].Name, len(o.Keys)))
			}
		}
		if len(why) > 0 {
			r.at(n.Pos, scriptEntry(n), "script %q: %s", n.Name, strings.Join(why, "; "))
		}
	}
}

// accepts reports whether KEYS position pos of the new spec takes the names
// old key k made: k by name, or a key of the same database and pattern.
func accepts(pos *keyspec.ScriptKey, k *keyspec.Key) bool {
	for _, n := range pos.OneOf {
		if n.Name == k.Name || n.DB.ID() == k.DB.ID() && n.Pattern.Glob() == k.Pattern.Glob() {
			return true
		}
	}
	return false
}

func scriptArgvChanged(c *comparison, r *reporter) {
	for _, p := range c.presentScripts() {
		o, n := p.old, p.new
		at := n.Pos
		why := positionChanges("ARGV", o.Argv, n.Argv, func(a *keyspec.Arg) string { return a.Name },
			func(na *keyspec.Arg) { at = na.Pos },
			func(i int, oa, na *keyspec.Arg) []string {
				if d := argNarrowed(oa, na); d != "" {
					at = na.Pos
					return []string{fmt.Sprintf("ARGV[%d] %s narrowed: %s", i+1, na.Name, d)}
				}
				return nil
			})
		for i := len(o.Argv); i < len(n.Argv); i++ {
			if !n.Argv[i].Optional && n.Argv[i].Count().Min > 0 {
				why = append(why, fmt.Sprintf("ARGV[%d] %s added, required: callers of the previous release send %d", i+1, n.Argv[i].Name, len(o.Argv)))
				at = n.Argv[i].Pos
			}
		}
		if len(why) > 0 {
			r.at(at, scriptEntry(n), "script %q: %s", n.Name, strings.Join(why, "; "))
		}
	}
}

func scriptReplyChanged(c *comparison, r *reporter) {
	for _, p := range c.presentScripts() {
		scriptReplyChangedPair(p, r)
	}
}

// scriptReplyChangedPair compares one script's replies.
func scriptReplyChangedPair(p scriptPair, r *reporter) {
	o, n := p.old.Reply, p.new.Reply
	var why string
	switch {
	case o.ByArg == nil && n.ByArg == nil:
		why = replyChanged(o, n)
	case o.ByArg == nil || n.ByArg == nil || o.ByArg.Name != n.ByArg.Name:
		why = fmt.Sprintf("its shape is chosen by %s, was by %s", byArg(n), byArg(o))
	default:
		var parts []string
		for _, os := range o.Shapes {
			ns := shapeOf(n, os.Value)
			if ns == nil {
				parts = append(parts, fmt.Sprintf("shape %s (%s=%q) removed", os.Value, o.ByArg.Name, os.Value))
			} else if d := replyChanged(os.Reply, ns.Reply); d != "" {
				parts = append(parts, fmt.Sprintf("shape %s: %s", os.Value, d))
			}
		}
		why = strings.Join(parts, "; ")
	}
	if why != "" {
		r.at(n.Pos, scriptEntry(p.new), "script %q reply: %s: a caller of the previous release cannot decode it", p.new.Name, why)
	}
}

// replyChanged says how reply n breaks a decoder of o, or "".
func replyChanged(o, n keyspec.Reply) string {
	switch {
	case (o.Value == nil) != (n.Value == nil):
		return fmt.Sprintf("the reply is %s, was %s", replyShape(n), replyShape(o))
	case o.Value != nil:
		ov := *o.Value
		ov.Name = n.Value.Name // a scalar's name is not on the wire
		return fieldWidened(&ov, n.Value)
	}
	return fieldsChanged(o.Fields, n.Fields)
}

func byArg(r keyspec.Reply) string {
	if r.ByArg == nil {
		return "nothing (one shape)"
	}
	return "ARGV " + r.ByArg.Name
}

func shapeOf(r keyspec.Reply, value string) *keyspec.ReplyShape {
	for _, s := range r.Shapes {
		if s.Value == value {
			return s
		}
	}
	return nil
}

// positionKind is what a KEYS or ARGV position carries: a key, a channel's
// name, or nothing the script reads.
func positionKind(channel *keyspec.Channel, unused string) string {
	switch {
	case unused != "":
		return "unused"
	case channel != nil:
		return "channel " + channel.Name
	}
	return "read"
}

func scriptPositionChanged(c *comparison, r *reporter) {
	for _, p := range c.presentScripts() {
		o, n := p.old, p.new
		var why []string
		check := func(kind string, i int, name, ok, nk string) {
			switch {
			case ok == nk, nk == "unused": // the same, or no longer read: callers may go on passing it
			case ok == "unused" && nk == "read":
				why = append(why, fmt.Sprintf("%s[%d] %s was unused (callers of the previous release may pass anything there) and is now read", kind, i+1, name))
			case ok == "unused":
				why = append(why, fmt.Sprintf("%s[%d] %s was unused (callers of the previous release may pass anything there) and now carries %s", kind, i+1, name, nk))
			default:
				why = append(why, fmt.Sprintf("%s[%d] %s carries %s, was %s", kind, i+1, name, nk, ok))
			}
		}
		for i := 0; i < min(len(o.Keys), len(n.Keys)); i++ {
			if o.Keys[i].Name == n.Keys[i].Name {
				check("KEYS", i, n.Keys[i].Name, positionKind(o.Keys[i].Channel, o.Keys[i].Unused), positionKind(n.Keys[i].Channel, n.Keys[i].Unused))
			}
		}
		for i := 0; i < min(len(o.Argv), len(n.Argv)); i++ {
			if o.Argv[i].Name == n.Argv[i].Name {
				check("ARGV", i, n.Argv[i].Name, positionKind(o.Argv[i].Channel, o.Argv[i].Unused), positionKind(n.Argv[i].Channel, n.Argv[i].Unused))
			}
		}
		if len(why) > 0 {
			r.at(n.Pos, scriptEntry(n), "script %q: %s", n.Name, strings.Join(why, "; "))
		}
	}
}

func scriptRepeatNarrowed(c *comparison, r *reporter) {
	for _, p := range c.presentScripts() {
		o, n := p.old, p.new
		var why []string
		narrower := func(kind string, i int, name string, oc, nc keyspec.Repeat) {
			if nc.Min > oc.Min || nc.Max < oc.Max {
				why = append(why, fmt.Sprintf("%s[%d] %s takes %d..%d values, was %d..%d", kind, i+1, name, nc.Min, nc.Max, oc.Min, oc.Max))
			}
		}
		for i := 0; i < min(len(o.Keys), len(n.Keys)); i++ {
			if o.Keys[i].Name == n.Keys[i].Name {
				narrower("KEYS", i, n.Keys[i].Name, o.Keys[i].Count(), n.Keys[i].Count())
			}
		}
		for i := 0; i < min(len(o.Argv), len(n.Argv)); i++ {
			if o.Argv[i].Name == n.Argv[i].Name {
				narrower("ARGV", i, n.Argv[i].Name, o.Argv[i].Count(), n.Argv[i].Count())
			}
		}
		if len(why) > 0 {
			r.at(n.Pos, scriptEntry(n), "script %q: %s: callers of the previous release may pass a count the new script refuses", n.Name, strings.Join(why, "; "))
		}
	}
}

func replyShape(r keyspec.Reply) string {
	if r.Value != nil {
		return "one " + r.Value.Type
	}
	return fmt.Sprintf("an array of %d fields", len(r.Fields))
}

func scriptErrorRemoved(c *comparison, r *reporter) {
	for _, p := range c.presentScripts() {
		var o, n []string
		for _, e := range p.old.Errors {
			o = append(o, e.Code)
		}
		for _, e := range p.new.Errors {
			n = append(n, e.Code)
		}
		if gone := missing(o, n); len(gone) > 0 {
			r.at(p.new.Pos, scriptEntry(p.new), "script %q no longer declares error %s: callers of the previous release match on it, and the generated error values for it are gone", p.new.Name, strings.Join(gone, ", "))
		}
	}
}

func scriptReadOnlyChanged(c *comparison, r *reporter) {
	for _, p := range c.presentScripts() {
		if p.old.ReadOnly && !p.new.ReadOnly {
			r.at(p.new.Pos, scriptEntry(p.new), "script %q is no longer read_only: the previous release sends it by %s, which refuses its writes", p.new.Name, sentBy(p.new.Instance, "FCALL_RO", "EVALSHA_RO"))
		}
	}
}

func functionReplaced(c *comparison, r *reporter) {
	for _, p := range c.presentScripts() {
		if !p.old.Instance.Functions() || !p.new.Instance.Functions() {
			continue
		}
		os, ns := c.old.Sources[p.old.ID], c.new.Sources[p.new.ID]
		if os == nil || ns == nil || os.SHA1 == ns.SHA1 {
			continue
		}
		r.at(p.new.Pos, scriptEntry(p.new), "script %q changed (SHA1 %.8s -> %.8s) in functions mode: its function is now %s_%s_%.8s, and FUNCTION LOAD REPLACE of library %s removes the %.8s one that processes of the previous release call (ErrNoFunction until they are replaced): deploy the library and the processes together", p.new.Name, os.SHA1, ns.SHA1, p.new.Instance.Name, p.new.Name, ns.SHA1, p.new.Instance.Name, os.SHA1)
	}
}

// ---- rolling deploy: channels ----

func channelRemoved(c *comparison, r *reporter) {
	for _, p := range c.channels() {
		if p.new == nil && c.new.Spec.Instance(p.old.Instance.Name) != nil {
			r.at(p.old.Pos, channelEntry(p.old), "channel %q (%s) is gone: subscribers and publishers of the previous release talk to nobody, and lose its ACL grant", p.old.Name, p.old.Pattern.Raw)
		}
	}
}

func channelPatternChanged(c *comparison, r *reporter) {
	for _, p := range c.channels() {
		if p.new == nil {
			continue
		}
		o, n := p.old, p.new
		var why []string
		if o.Instance.Name != n.Instance.Name {
			why = append(why, fmt.Sprintf("moves from instance %s to %s", o.Instance.Name, n.Instance.Name))
		} else if o.ServerOf().Name != n.ServerOf().Name {
			why = append(why, fmt.Sprintf("moves from server %s to %s", serverName(o.ServerOf()), serverName(n.ServerOf())))
		}
		if o.Pattern.Glob() != n.Pattern.Glob() {
			why = append(why, fmt.Sprintf("pattern %s, was %s", n.Pattern.Raw, o.Pattern.Raw))
		}
		for _, pp := range sameShapeParams(o.Pattern, n.Pattern) {
			if d := placeholderEncodingChanged(pp[0], pp[1]); d != "" {
				why = append(why, "placeholder "+pp[1].Name+" "+d)
			} else if d := paramNarrowed(pp[0], pp[1]); d != "" {
				why = append(why, "placeholder "+pp[1].Name+": "+d)
			}
		}
		if len(why) > 0 {
			r.at(n.Pos, channelEntry(n), "channel %q %s: subscribers of the previous release miss what the new release publishes, and the reverse", n.Name, strings.Join(why, "; "))
		}
	}
}
