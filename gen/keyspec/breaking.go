package keyspec

import "fmt"

// Breaking is the spec's breaking: section, read by luagen breaking.
type Breaking struct {
	Pos
	// Ignore are the findings a change accepts, each with its reason.
	Ignore []BreakingIgnore
}

// BreakingIgnore is one accepted finding of luagen breaking: a rule (or a whole
// category of rules) on one entry, or on every entry when Entry is "".
type BreakingIgnore struct {
	Pos
	Rule   string // a rule's name ("key-removed") or a category ("data")
	Entry  string // the entry's path ("keys.user_hits", "scripts.lock_acquire"), or ""
	Reason string
}

type rawBreaking struct {
	Ignore []rawIgnore `yaml:"ignore"`
}

type rawIgnore struct {
	Rule   string `yaml:"rule"`
	Entry  string `yaml:"entry"`
	Reason string `yaml:"reason"`
}

// buildBreaking resolves the breaking: section. Rule names are luagen breaking's
// to check; here each entry needs a rule and a reason.
func (p *parser) buildBreaking(raw *rawSpec) {
	if raw.Breaking == nil {
		return
	}
	p.spec.Breaking.Pos = p.pos("breaking")
	for i, r := range raw.Breaking.Ignore {
		path := fmt.Sprintf("breaking.ignore[%d]", i)
		ig := BreakingIgnore{Pos: p.pos(path), Rule: r.Rule, Entry: r.Entry, Reason: r.Reason}
		if !kindRe.MatchString(r.Rule) {
			p.errf(path, "breaking ignore", "rule %q: want the name of a luagen breaking rule (key-removed) or a category (data, rolling-deploy, acl)", r.Rule)
		}
		if r.Reason == "" {
			p.errf(path, "breaking ignore", "reason is missing: say why the change is safe (the data migrated, every caller deployed first, ...)")
		}
		p.spec.Breaking.Ignore = append(p.spec.Breaking.Ignore, ig)
	}
}
