// Package breaking compares a spec and its Lua with an older revision of them
// and reports each change that breaks what the older revision left running:
// data stored under keys the new spec no longer reaches or reads otherwise
// (category data), callers of the previous release during a rolling deploy
// (rolling-deploy), and ACL grants the previous release's scripts need
// (acl). Each rule checks one concern on the entries both revisions declare;
// Rules lists them, and a new model field is a new rule (or a line in one).
//
// Like buf breaking, a finding has a rule, a category and a severity; a spec
// accepts a finding in its breaking: ignore list, with a reason.
package breaking

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/snapshot"
)

// Category is the kind of damage a rule's findings do.
type Category string

// The categories.
const (
	// Data: what is stored under the previous spec is stranded, expires
	// otherwise, or no longer reads back.
	Data Category = "data"
	// RollingDeploy: processes of the previous release, still running while
	// the new one rolls out, fail against what the new one deploys.
	RollingDeploy Category = "rolling-deploy"
	// ACL: a user loses a grant the previous release's scripts or code need.
	ACL Category = "acl"
)

// Categories lists every category.
var Categories = []Category{Data, RollingDeploy, ACL}

// Severity says whether a finding fails the check.
type Severity string

// The severities.
const (
	// Error findings fail luagen breaking (exit 1) unless ignored.
	Error Severity = "error"
	// Warning findings are printed and do not fail it.
	Warning Severity = "warning"
)

// Finding is one breaking change.
type Finding struct {
	keyspec.Pos `json:"-"` // in the new spec; in the old one for an entry it no longer has
	Rule        string     `json:"rule"`
	Category    Category   `json:"category"`
	Severity    Severity   `json:"severity"`
	// Entry is the path of the entry the finding is on ("keys.user_hits"),
	// which a breaking: ignore entry names.
	Entry string `json:"entry"`
	Msg   string `json:"message"`
	// Ignored is the reason of the ignore entry that accepts the finding, or "".
	Ignored string `json:"ignored,omitempty"`
}

// String is the finding as FILE:LINE: rule: message, a warning's message
// starting "warning: ".
func (f Finding) String() string {
	msg := f.Msg
	if f.Severity == Warning {
		msg = "warning: " + msg
	}
	return fmt.Sprintf("%s:%d: %s: %s [%s]", f.File, f.Line, f.Rule, msg, f.Category)
}

// MarshalJSON writes the finding with its file and line first, its text as
// it is (no HTML escapes: "->" stays "->").
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		File string `json:"file"`
		Line int    `json:"line"`
		plain
	}{f.File, f.Line, plain(f)})
	return bytes.TrimSpace(b.Bytes()), err
}

// Fails reports whether the finding fails the check: an error not ignored.
func (f Finding) Fails() bool { return f.Severity == Error && f.Ignored == "" }

// Rule is one concern luagen breaking checks.
type Rule struct {
	Name     string
	Category Category
	// Severity is the rule's own; a finding may be milder where the damage is
	// (a script removed in evalsha mode: its callers keep it by SHA).
	Severity Severity
	Doc      string
	check    func(c *comparison, r *reporter)
}

// RuleNamed is the rule called name, or nil.
func RuleNamed(name string) *Rule {
	for i := range Rules {
		if Rules[i].Name == name {
			return &Rules[i]
		}
	}
	return nil
}

// Compare reports what changes from old to new break. The spec's breaking:
// ignore entries (new's) mark the findings they accept; an ignore entry that
// names no rule or category is an error naming its line.
func Compare(old, new *snapshot.Snapshot) ([]Finding, error) {
	if err := checkIgnores(new.Spec); err != nil {
		return nil, err
	}
	c := newComparison(old, new)
	var out []Finding
	for i := range Rules {
		rule := &Rules[i]
		r := &reporter{rule: rule, c: c}
		rule.check(c, r)
		out = append(out, r.found...)
	}
	for i := range out {
		out[i].Ignored = ignored(new.Spec, out[i])
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File == new.Spec.File // the new spec's first, then the old one's
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Rule < b.Rule
	})
	return out, nil
}

func checkIgnores(spec *keyspec.Spec) error {
	var errs keyspec.List
	for _, ig := range spec.Breaking.Ignore {
		if RuleNamed(ig.Rule) == nil && !isCategory(ig.Rule) {
			var names []string
			for _, r := range Rules {
				names = append(names, r.Name)
			}
			errs = append(errs, &keyspec.Error{Pos: ig.Pos, Entry: "breaking ignore", Msg: fmt.Sprintf("rule %q: no such rule or category (categories: data, rolling-deploy, acl; rules: %s)", ig.Rule, strings.Join(names, ", "))})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func isCategory(s string) bool {
	for _, c := range Categories {
		if string(c) == s {
			return true
		}
	}
	return false
}

// ignored is the reason of the first ignore entry of spec accepting f.
func ignored(spec *keyspec.Spec, f Finding) string {
	for _, ig := range spec.Breaking.Ignore {
		if ig.Rule != f.Rule && ig.Rule != string(f.Category) {
			continue
		}
		if ig.Entry == "" || ig.Entry == f.Entry || strings.HasPrefix(f.Entry, ig.Entry+".") {
			return ig.Reason
		}
	}
	return ""
}

// reporter collects one rule's findings.
type reporter struct {
	rule  *Rule
	c     *comparison
	found []Finding
}

// at reports a finding of the rule's severity.
func (r *reporter) at(pos keyspec.Pos, entry, format string, args ...any) {
	r.with(r.rule.Severity, pos, entry, format, args...)
}

// with reports a finding of severity sev.
func (r *reporter) with(sev Severity, pos keyspec.Pos, entry, format string, args ...any) {
	r.found = append(r.found, Finding{Pos: pos, Rule: r.rule.Name, Category: r.rule.Category, Severity: sev, Entry: entry, Msg: fmt.Sprintf(format, args...)})
}

// Summary counts findings: failing, warnings and ignored ones.
type Summary struct{ Failing, Warnings, Ignored int }

// Summarize counts fs.
func Summarize(fs []Finding) Summary {
	var s Summary
	for _, f := range fs {
		switch {
		case f.Ignored != "":
			s.Ignored++
		case f.Severity == Warning:
			s.Warnings++
		default:
			s.Failing++
		}
	}
	return s
}
