package keyspec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
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
	// luagen alerts' windows (Placeholders).
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
var ruleLabels = set("severity", "source", "luagen_instance", "luagen_server")

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
		}
		if strings.TrimSpace(r.Summary) == "" {
			p.errf(path, entry, "summary is missing: what is wrong, in one line")
		}
		if strings.TrimSpace(r.Runbook) == "" {
			p.errf(path, entry, "runbook is missing: what the operator checks and does")
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

// alertExpr checks an expr: present, and every $ one of AlertPlaceholders.
func (p *parser) alertExpr(path, entry, expr string) {
	if expr == "" {
		p.errf(path, entry, "expr is missing: the PromQL expression that fires the alert")
		return
	}
	for _, m := range placeholderRe.FindAllString(expr, -1) {
		if !slices.Contains(AlertPlaceholders, m) {
			p.errf(path+".expr", entry, "expr: %q is not a placeholder: want %s", m, strings.Join(AlertPlaceholders, " or "))
			return
		}
	}
}

// alertAbout resolves the entry an alert is about, its instance and server.
func (p *parser) alertAbout(path, entry string, a *Alert) {
	section, name, _ := strings.Cut(a.About, ".")
	var at Pos
	switch section {
	case "instances":
		if in := p.instances[name]; in != nil {
			at, a.Instance, a.Server = in.Pos, in, &in.Server
		}
	case "keys":
		if k := p.keys[name]; k != nil && k.DB != nil {
			at, a.Instance, a.Server = k.Pos, k.Instance(), k.DB.ServerOf()
		}
	case "channels":
		if c := p.channels[name]; c != nil && c.Instance != nil {
			at, a.Instance, a.Server = c.Pos, c.Instance, c.ServerOf()
		}
	case "scripts":
		if s := p.spec.Script(name); s != nil && s.Instance != nil {
			at, a.Instance, a.Server = s.Pos, s.Instance, &s.Instance.Server
			if s.DB != nil {
				a.Server = s.DB.ServerOf()
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
			if strings.TrimSpace(s.Series) == "" || strings.TrimSpace(s.Values) == "" {
				p.errf(sp, entry, "test %s[%d]: set series (a selector, name{label=\"v\"}) and values (promtool's notation, 0+1x40)", c.field, i)
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
		}
	}
	return t
}
