package keyspec

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Alert is an alerting rule the spec declares about the metrics its own
// services export (alerts:), beside the rules luagen alerts derives from the
// spec itself: luagen alerts writes it into the rules of the server that holds
// the entry it is about, with its promtool unit tests.
type Alert struct {
	Pos
	Name     string
	Severity string
	// Expr is the PromQL expression; $window and $long_window in it stand for
	// luagen alerts' windows (AlertPlaceholders).
	Expr    string
	For     time.Duration // 0: fires at once
	Summary string
	Runbook string
	// About is the path of the spec entry the alert watches ("channels.NAME",
	// "keys.NAME", "scripts.NAME" or "instances.NAME"); AboutPos is that
	// entry's line, which the rule's source label names.
	About    string
	AboutPos Pos
	// Source is the text of the source label after the entry's file and line:
	// the alert's own source, or else About.
	Source   string
	Instance *Instance
	Server   *Server // the server holding the entry
	Test     AlertTest
}

// AlertTest is the promtool unit test of an alert: series under which it fires
// (with Labels beside the rule's own) and series under which it stays quiet.
type AlertTest struct {
	Fire   []AlertSeries
	Quiet  []AlertSeries
	Labels map[string]string
}

// AlertSeries is one input series of a promtool unit test: a series selector
// (`name{label="v"}`) and its values in promtool's expanding notation ("0+1x40").
type AlertSeries struct {
	Series string
	Values string
}

// AlertPlaceholders are what an alert's expr may hold for luagen alerts'
// windows: the range of rate() and increase() (--window, 5m by default) and
// the memory of "was there before" (1h).
var AlertPlaceholders = []string{"$window", "$long_window"}

// ExprWith is the alert's expr with its placeholders replaced: $window by
// window, $long_window by longWindow; a $ inside the expr's strings is the
// string's own and stays.
func (a *Alert) ExprWith(window, longWindow string) string {
	code, err := exprCode(a.Expr)
	if err != nil { // refused at parse time
		code = a.Expr
	}
	var b strings.Builder
	last := 0
	for _, m := range placeholderRe.FindAllStringIndex(code, -1) {
		b.WriteString(a.Expr[last:m[0]])
		switch code[m[0]:m[1]] {
		case "$window":
			b.WriteString(window)
		case "$long_window":
			b.WriteString(longWindow)
		default:
			b.WriteString(a.Expr[m[0]:m[1]])
		}
		last = m[1]
	}
	b.WriteString(a.Expr[last:])
	return b.String()
}

// AlertTestEval is when an alert's promtool unit test looks (40 one-minute
// samples, past every derived rule's for: and window); an alert whose for:
// is longer than AlertTestEval - 5m is looked at 5m after its for:.
const AlertTestEval = 35 * time.Minute

// AlertTestEvalOf is when the unit test of an alert whose for: is forD looks.
func AlertTestEvalOf(forD time.Duration) time.Duration {
	return max(AlertTestEval, forD+5*time.Minute)
}

// AlertsOf lists the alerts the spec declares about entries of in held by srv,
// in the order the spec declares them.
func (s *Spec) AlertsOf(in *Instance, srv *Server) []*Alert {
	var out []*Alert
	for _, a := range s.Alerts {
		if a.Instance == in && a.Server == srv {
			out = append(out, a)
		}
	}
	return out
}

type rawAlert struct {
	Alert    string        `yaml:"alert"`
	Severity string        `yaml:"severity"`
	Expr     string        `yaml:"expr"`
	For      string        `yaml:"for"`
	Summary  string        `yaml:"summary"`
	Runbook  string        `yaml:"runbook"`
	About    string        `yaml:"about"`
	Source   string        `yaml:"source"`
	Test     *rawAlertTest `yaml:"test"`
}

type rawAlertTest struct {
	Fire   []rawAlertSeries  `yaml:"fire"`
	Quiet  []rawAlertSeries  `yaml:"quiet"`
	Labels map[string]string `yaml:"labels"`
}

type rawAlertSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

var (
	// alertNameRe: a Prometheus alert name (a metric name without colons).
	alertNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	labelNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// placeholderRe: a $ and the word after it in an expr.
	placeholderRe = regexp.MustCompile(`\$[A-Za-z0-9_]*`)
)

// generatedAlertPrefixes start the name of every rule luagen alerts derives.
var generatedAlertPrefixes = []string{"Redis", "Luagen"}

// ruleLabels are the labels luagen alerts sets on every alert.
var ruleLabels = set("severity", "source", "luagen_instance", "luagen_server", "alertname")

// buildAlerts resolves the alerts: section; it runs after every entry an alert
// may be about is built.
func (p *parser) buildAlerts(raw *rawSpec) {
	names := map[string]int{} // alert name -> line
	for i, r := range raw.Alerts {
		path := fmt.Sprintf("alerts[%d]", i)
		entry := fmt.Sprintf("alert %q", r.Alert)
		if r.Alert == "" {
			entry = path
		}
		a := &Alert{Pos: p.pos(path), Name: r.Alert, Severity: r.Severity, Expr: strings.TrimSpace(r.Expr), Summary: r.Summary, Runbook: r.Runbook, About: r.About, Source: orDefault(r.Source, r.About)}
		switch {
		case r.Alert == "":
			p.errf(path, entry, "alert is missing: the alert's name")
		case !alertNameRe.MatchString(r.Alert):
			p.errf(path+".alert", entry, "name must be [A-Za-z_][A-Za-z0-9_]* (a Prometheus alert name)")
		case reservedAlertName(r.Alert):
			p.errf(path+".alert", entry, "names starting with %s are the rules luagen alerts derives itself: name the alert after its service", strings.Join(generatedAlertPrefixes, " or "))
		}
		if line, dup := names[r.Alert]; dup && r.Alert != "" {
			p.errf(path+".alert", entry, "alert %s is declared twice (also line %d)", r.Alert, line)
		}
		names[r.Alert] = a.Line
		if !wordRe.MatchString(r.Severity) {
			p.errf(path+".severity", entry, "severity %q: want one lower-case word (critical, warning, info)", r.Severity)
		}
		p.alertExpr(path, entry, a.Expr)
		if r.For != "" {
			a.For = p.duration(path+".for", entry, "for", r.For, false)
			if a.For > maxAlertFor {
				p.errf(path+".for", entry, "for %s: at most %s (an alert that must hold longer is a report, not an alert)", r.For, maxAlertFor)
			}
		}
		if strings.TrimSpace(r.Summary) == "" {
			p.errf(path, entry, "summary is missing: what is wrong, in one line")
		}
		if strings.TrimSpace(r.Runbook) == "" {
			p.errf(path, entry, "runbook is missing: what the operator checks and does")
		}
		for _, f := range []struct{ field, text string }{{"source", r.Source}, {"summary", r.Summary}, {"runbook", r.Runbook}} {
			if err := checkAlertText(f.text); err != nil {
				p.errf(path+"."+f.field, entry, "%s: %v", f.field, err)
			}
		}
		p.alertAbout(path, entry, a)
		a.Test = p.alertTest(path, entry, r.Test)
		p.spec.Alerts = append(p.spec.Alerts, a)
	}
}

func reservedAlertName(name string) bool {
	for _, pre := range generatedAlertPrefixes {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// maxAlertFor is the longest for: an alert may wait.
const maxAlertFor = 7 * 24 * time.Hour

// checkAlertText checks the text of a label or annotation luagen writes as
// declared: Prometheus expands label and annotation values as Go templates,
// so "{{" would be evaluated (or break the rule file) instead of read; and
// what the spec's own text may not hold (runeProblem), an escape in a quoted
// string may not smuggle in.
func checkAlertText(s string) error {
	if strings.Contains(s, "{{") {
		return fmt.Errorf(`"{{" would start a Prometheus template: luagen writes the text as declared, not as a template; write it without "{{"`)
	}
	for _, c := range s {
		if msg := runeProblem(c); msg != "" && !strings.ContainsRune("\t\n\r", c) { // whitespace is folded
			return errors.New(msg)
		}
	}
	return nil
}

// alertExpr checks an expr: present, its strings ended, every $ outside its
// strings one of AlertPlaceholders (label_replace's "$1" is the string's
// own), its brackets closed in order.
func (p *parser) alertExpr(path, entry, expr string) {
	if expr == "" {
		p.errf(path, entry, "expr is missing: the PromQL expression that fires the alert")
		return
	}
	code, err := exprCode(expr)
	if err != nil {
		p.errf(path+".expr", entry, "expr: %v", err)
		return
	}
	for _, m := range placeholderRe.FindAllString(code, -1) {
		if !slices.Contains(AlertPlaceholders, m) {
			p.errf(path+".expr", entry, "expr: %q is not a placeholder: want %s", m, strings.Join(AlertPlaceholders, " or "))
			return
		}
	}
	if err := checkBrackets(code); err != nil {
		p.errf(path+".expr", entry, "expr: %v", err)
	}
}

// exprCode is a PromQL expression with its string literals and comments
// blanked out (what luagen sees of PromQL: promtool check rules parses the
// rest); an error when a string does not end.
func exprCode(expr string) (string, error) {
	b := []byte(expr)
	for i := 0; i < len(b); i++ {
		n := 0
		switch b[i] {
		case '"', '\'', '`':
			var err error
			if n, err = quotedLen(expr[i:]); err != nil {
				return "", err
			}
		case '#': // a comment, to the end of the line
			n = strings.IndexByte(expr[i:], '\n')
			if n < 0 {
				n = len(expr) - i
			}
		}
		for j := i; j < i+n; j++ {
			b[j] = ' '
		}
		i += max(n-1, 0)
	}
	return string(b), nil
}

// checkBrackets checks that the brackets of code (an expression without its
// strings, exprCode) close in order.
func checkBrackets(code string) error {
	closing := map[rune]rune{'(': ')', '[': ']', '{': '}'}
	var open []rune
	for i, c := range code {
		switch {
		case closing[c] != 0:
			open = append(open, c)
		case c == ')' || c == ']' || c == '}':
			if len(open) == 0 || closing[open[len(open)-1]] != c {
				return fmt.Errorf("%q at offset %d closes nothing open", c, i)
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("%q is never closed", open[len(open)-1])
	}
	return nil
}

// quotedLen is the length of the PromQL string literal s starts with ("...",
// '...' with Go's escapes, `...` raw).
func quotedLen(s string) (int, error) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == '\n' && q != '`':
			return 0, fmt.Errorf("string %s has a newline", s[:i])
		case s[i] == q:
			lit := s[:i+1]
			if q == '\'' { // Go unquotes one rune between '': as "..." instead
				lit = `"` + strings.ReplaceAll(strings.ReplaceAll(s[1:i], `\'`, `'`), `"`, `\"`) + `"`
			}
			if _, err := strconv.Unquote(lit); err != nil {
				return 0, fmt.Errorf("string %s: bad escape", s[:i+1])
			}
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("string %s is never closed", s)
}

var (
	// seriesNameRe: a metric name, then the label matchers if any.
	seriesNameRe  = regexp.MustCompile(`^[A-Za-z_:][A-Za-z0-9_:]*`)
	seriesLabelRe = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*`)
	// sampleRe: one token of promtool's expanding notation: a value, _ (no
	// sample) or stale, a value repeated (1x5) or growing (0+1x40, 9-1x9).
	sampleRe = regexp.MustCompile(`^(?:stale|_(?:x\d+)?|` + sampleNum + `(?:x\d+|[+-]` + sampleUnsigned + `x\d+)?)$`)
)

const (
	sampleUnsigned = `(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|(?i:inf|nan))`
	sampleNum      = `[+-]?` + sampleUnsigned
)

// checkSeries checks a promtool input series: a metric name and/or label
// matchers name="value", as promtool test rules reads them.
func checkSeries(s string) error {
	name := seriesNameRe.FindString(s)
	rest := s[len(name):]
	if rest == "" {
		return nil
	}
	if rest[0] != '{' || !strings.HasSuffix(rest, "}") {
		return fmt.Errorf(`want a metric name and its labels, name{label="v"}`)
	}
	rest = rest[1 : len(rest)-1]
	for strings.TrimSpace(rest) != "" {
		m := seriesLabelRe.FindStringSubmatch(rest)
		if m == nil || len(rest) == len(m[0]) || !strings.ContainsRune("\"'`", rune(rest[len(m[0])])) {
			return fmt.Errorf(`want labels label="value", separated by commas`)
		}
		rest = rest[len(m[0]):]
		n, err := quotedLen(rest)
		if err != nil {
			return err
		}
		rest = strings.TrimSpace(rest[n:])
		if rest != "" && rest[0] != ',' {
			return fmt.Errorf(`want labels label="value", separated by commas`)
		}
		rest = strings.TrimPrefix(rest, ",")
	}
	if name == "" && strings.TrimSpace(s[1:len(s)-1]) == "" {
		return fmt.Errorf("names no metric and no label")
	}
	return nil
}

// checkSeriesValues checks values in promtool's expanding notation (native
// histograms, {{...}}, are left to promtool).
func checkSeriesValues(v string) error {
	if strings.Contains(v, "{") {
		return nil
	}
	for _, tok := range strings.Fields(v) {
		if !sampleRe.MatchString(tok) {
			return fmt.Errorf("%q: want promtool's notation (1, 1x5, 0+1x40, 9-1x9, _, stale)", tok)
		}
	}
	return nil
}

// alertAbout resolves the entry an alert is about, its instance and server.
func (p *parser) alertAbout(path, entry string, a *Alert) {
	section, name, _ := strings.Cut(a.About, ".")
	var at Pos
	var db *DB // the database of a key or script
	switch section {
	case "instances":
		if in := p.instances[name]; in != nil {
			at, a.Instance, a.Server = in.Pos, in, &in.Server
		}
	case "keys":
		if k := p.keys[name]; k != nil && k.DB != nil {
			at, a.Instance, a.Server, db = k.Pos, k.Instance(), k.DB.ServerOf(), k.DB
		}
	case "channels":
		if c := p.channels[name]; c != nil && c.Instance != nil {
			at, a.Instance, a.Server = c.Pos, c.Instance, c.ServerOf()
		}
	case "scripts":
		if s := p.spec.Script(name); s != nil && s.Instance != nil {
			at, a.Instance, a.Server = s.Pos, s.Instance, &s.Instance.Server
			if s.DB != nil {
				a.Server, db = s.DB.ServerOf(), s.DB
			}
		}
	default:
		if a.About == "" {
			p.errf(path, entry, "about is missing: the entry the alert watches (channels.NAME, keys.NAME, scripts.NAME or instances.NAME)")
		} else {
			p.errf(path+".about", entry, "about %q: want channels.NAME, keys.NAME, scripts.NAME or instances.NAME", a.About)
		}
		return
	}
	if a.Instance == nil {
		p.errf(path+".about", entry, "about %q: %s has no entry %q", a.About, section, name)
		return
	}
	if db != nil && !db.Live() {
		p.errf(path+".about", entry, "about %q: its database %s is cut over (legacy: {state: cut_over}): nothing of it runs to alert about", a.About, db.ID())
		return
	}
	a.AboutPos = at
}

// alertTest resolves an alert's promtool unit test: each alert must be provable.
func (p *parser) alertTest(path, entry string, r *rawAlertTest) AlertTest {
	tp := path + ".test"
	if r == nil {
		p.errf(path, entry, "test is missing: the series under which the alert fires (fire:) and stays quiet (quiet:), for its promtool unit test")
		return AlertTest{}
	}
	t := AlertTest{Labels: r.Labels}
	for _, c := range []struct {
		field string
		in    []rawAlertSeries
		out   *[]AlertSeries
	}{{"fire", r.Fire, &t.Fire}, {"quiet", r.Quiet, &t.Quiet}} {
		if len(c.in) == 0 {
			p.errf(tp, entry, "test %s is missing: at least one input series {series, values}", c.field)
		}
		for i, s := range c.in {
			sp := fmt.Sprintf("%s.%s[%d]", tp, c.field, i)
			switch {
			case strings.TrimSpace(s.Series) == "" || strings.TrimSpace(s.Values) == "":
				p.errf(sp, entry, "test %s[%d]: set series (a selector, name{label=\"v\"}) and values (promtool's notation, 0+1x40)", c.field, i)
			default:
				if err := checkSeries(s.Series); err != nil {
					p.errf(sp+".series", entry, "test %s[%d]: series %q: %v", c.field, i, s.Series, err)
				}
				if err := checkSeriesValues(s.Values); err != nil {
					p.errf(sp+".values", entry, "test %s[%d]: values %q: %v", c.field, i, s.Values, err)
				}
			}
			*c.out = append(*c.out, AlertSeries(s))
		}
	}
	for _, l := range slices.Sorted(maps.Keys(r.Labels)) {
		switch {
		case !labelNameRe.MatchString(l):
			p.errf(tp+".labels", entry, "test label %q: want a Prometheus label name [A-Za-z_][A-Za-z0-9_]*", l)
		case ruleLabels[l]:
			p.errf(tp+".labels."+l, entry, "test label %s is the rule's own (%s): list only the labels the expression keeps", l, keysOf(ruleLabels))
		case strings.HasPrefix(l, "__"):
			p.errf(tp+".labels."+l, entry, "test label %s: names starting with __ are Prometheus' own, which no alert carries", l)
		case r.Labels[l] == "":
			p.errf(tp+".labels."+l, entry, "test label %s is empty: an empty label is no label (leave it out)", l)
		}
	}
	return t
}
