// Package alerts derives Prometheus alerting and recording rules for one
// instance (or one server of a split instance) from the spec: its memory
// budget (the deployed maxmemory, else the sizing estimate, else a declared
// default), its eviction policy, which of its keys must expire, its users,
// every script with its declared error codes and at-most-once outcome, its
// channels, over the generated wrappers' luagen_script_* metrics
// (runtime/scriptmetrics) and the standard Redis exporter's
// (prometheus-redis-exporter); beside them, the rules the spec declares about
// its services' own metrics (alerts:, keyspec.Alert), as declared. Every rule
// carries the spec entry it comes from (label source) and a runbook line;
// Tests writes promtool unit tests with synthetic series for each alert.
//
// The rules select the exporter's series of the instance by the labels the
// scrape configuration gives its targets: luagen_instance="<instance>" and,
// for a server of a split instance, luagen_server="<server>"
// (docs/operations.md).
package alerts

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
	"go.yaml.in/yaml/v3"
)

// DefaultBudgetBytes is the memory budget of a server whose maxmemory the
// spec leaves open and for which no sizing report is given: 1 GiB, stated
// so, with a note (Rules' notes) asking for the real one.
const DefaultBudgetBytes int64 = 1 << 30

// Options are what the rules need beyond the spec.
type Options struct {
	// Server is the server of a split instance the rules are for; "" for the
	// instance's own server.
	Server string
	// MaxmemoryBytes is the server's deployed maxmemory, when known; 0 when it
	// is still to be decided (the seeds' R1/R2).
	MaxmemoryBytes int64
	// SizingMaxmemoryBytes is luagen sizing's maxmemory for the server
	// (its report's servers[].maxmemory_bytes); 0 without a report.
	SizingMaxmemoryBytes int64
	// SizingSource names the sizing report, for the rules' source.
	SizingSource string
	// Window is the range of rate() and increase() (default 5m); LongWindow
	// the memory of "was there before" (default 1h); ForFactor scales every
	// rule's for: (default 1). Tests on a live Prometheus shorten them.
	Window     time.Duration
	LongWindow time.Duration
	ForFactor  float64
}

func (o *Options) defaults() {
	if o.Window == 0 {
		o.Window = 5 * time.Minute
	}
	if o.LongWindow == 0 {
		o.LongWindow = time.Hour
	}
	if o.ForFactor == 0 {
		o.ForFactor = 1
	}
}

// File is a Prometheus rule file.
type File struct {
	Groups []Group `yaml:"groups"`
}

// Group is one rule group.
type Group struct {
	Name  string  `yaml:"name"`
	Rules []*Rule `yaml:"rules"`
}

// Rule is an alerting rule (Alert set) or a recording rule (Record set).
type Rule struct {
	Alert       string            `yaml:"alert,omitempty"`
	Record      string            `yaml:"record,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
	// probe is the synthetic series that make the alert fire, for Tests.
	probe *probe
}

// probe is a promtool unit test of one alert: input series under which it
// fires at evalAt with the labels want (the rule's own are added), and series
// under which it stays quiet.
type probe struct {
	fire  []series
	quiet []series
	want  map[string]string
	at    time.Duration // when the tests look; 0: keyspec.AlertTestEval
}

type series struct{ name, values string }

// Note is something the rules could not take from the spec or the options,
// with the default they used instead; never a silent omission.
type Note struct {
	Source string
	Msg    string
}

func (n Note) String() string { return n.Source + ": " + n.Msg }

// rules is the state of one derivation.
type rules struct {
	spec  *keyspec.Spec
	in    *keyspec.Instance
	srv   *keyspec.Server
	o     Options
	sel   string // the exporter's selector of this server's targets
	notes []Note
}

// Rules derives the rule file of in (one of its servers with o.Server).
func Rules(spec *keyspec.Spec, in *keyspec.Instance, o Options) (*File, []Note, error) {
	o.defaults()
	srv := in.ServerNamed(o.Server)
	if srv == nil {
		return nil, nil, fmt.Errorf("instance %s has no server %q (servers: %s)", in.Name, o.Server, strings.Join(in.ServerNames()[1:], ", "))
	}
	r := &rules{spec: spec, in: in, srv: srv, o: o}
	r.sel = fmt.Sprintf(`luagen_instance=%q`, in.Name)
	if in.Split() {
		r.sel += fmt.Sprintf(`,luagen_server=%q`, srv.Name)
	}
	f := &File{}
	name := "luagen-" + in.Name
	if srv.Name != "" {
		name += "-" + srv.Name
	}
	f.Groups = append(f.Groups,
		Group{Name: name + "-redis", Rules: r.redis()},
		Group{Name: name + "-keys", Rules: r.keys()},
		Group{Name: name + "-access", Rules: r.access()},
	)
	if s := r.scripts(); len(s) > 0 {
		f.Groups = append(f.Groups, Group{Name: name + "-scripts", Rules: s})
	}
	if s := r.declared(); len(s) > 0 {
		f.Groups = append(f.Groups, Group{Name: name + "-services", Rules: s})
	}
	f.Groups = append(f.Groups, Group{Name: name + "-recording", Rules: r.recording()})
	var kept []Group
	for _, g := range f.Groups {
		if len(g.Rules) > 0 {
			kept = append(kept, g)
		}
	}
	f.Groups = kept
	return f, r.notes, nil
}

// YAML renders the rule file with its header.
func (f *File) YAML(header string) ([]byte, error) {
	b, err := yaml.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append([]byte(header), b...), nil
}

// Header is the comment a generated rule file starts with.
func Header(spec *keyspec.Spec, in *keyspec.Instance, server string, notes []Note) string {
	var b strings.Builder
	b.WriteString("# Code generated by luagen. DO NOT EDIT.\n")
	what := "instance " + in.Name
	if server != "" {
		what = "server " + server + " of instance " + in.Name
	}
	fmt.Fprintf(&b, "# Prometheus rules of %s, from %s (luagen alerts); docs/operations.md says what each alert means.\n", what, filepath.Base(spec.File))
	for _, n := range notes {
		fmt.Fprintf(&b, "# NOTE %s\n", oneLine(n.String()))
	}
	return b.String()
}

// --- helpers ---

func (r *rules) src(p keyspec.Pos, what string) string {
	if p.Line == 0 { // a section the spec leaves out (no server:): its instance
		p = r.in.Pos
	}
	return fmt.Sprintf("%s:%d %s", filepath.Base(p.File), p.Line, what)
}

func (r *rules) w() string  { return promDuration(r.o.Window) }
func (r *rules) lw() string { return promDuration(r.o.LongWindow) }

// scaledFor is d scaled by the options' ForFactor.
func (r *rules) scaledFor(d time.Duration) time.Duration {
	return time.Duration(float64(d) * r.o.ForFactor).Round(time.Second)
}

func (r *rules) forD(d time.Duration) string {
	d = r.scaledFor(d)
	if d <= 0 {
		return ""
	}
	return promDuration(d)
}

// s is a selector: the server's targets and extra matchers.
func (r *rules) s(extra ...string) string {
	return "{" + strings.Join(append([]string{r.sel}, extra...), ",") + "}"
}

// alert is a rule luagen derives: its runbook links its section in
// docs/operations.md.
func (r *rules) alert(name, severity, source, expr string, forD time.Duration, summary, runbook string, pr *probe) *Rule {
	return r.rule(name, severity, source, expr, forD, summary, oneLine(runbook)+" (docs/operations.md#"+strings.ToLower(name)+")", pr)
}

// rule is an alerting rule of this server with its labels and annotations.
func (r *rules) rule(name, severity, source, expr string, forD time.Duration, summary, runbook string, pr *probe) *Rule {
	rl := &Rule{Alert: name, Expr: expr, For: r.forD(forD),
		Labels:      map[string]string{"severity": severity, "luagen_instance": r.in.Name, "source": oneLine(source)},
		Annotations: map[string]string{"summary": oneLine(summary), "runbook": runbook},
		probe:       pr}
	if r.srv.Name != "" {
		rl.Labels["luagen_server"] = r.srv.Name
	}
	return rl
}

// targetLabels are the labels a synthetic exporter series of this server has.
func (r *rules) targetLabels(extra ...string) string {
	l := []string{`instance="redis:9121"`, `job="redis"`, fmt.Sprintf(`luagen_instance=%q`, r.in.Name)}
	if r.srv.Name != "" {
		l = append(l, fmt.Sprintf(`luagen_server=%q`, r.srv.Name))
	}
	return "{" + strings.Join(append(l, extra...), ",") + "}"
}

func promDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func human(b int64) string {
	switch {
	case b%(1<<30) == 0:
		return fmt.Sprintf("%dgb", b>>30)
	case b%(1<<20) == 0:
		return fmt.Sprintf("%dmb", b>>20)
	}
	return fmt.Sprintf("%d bytes", b)
}

// liveScripts are the live scripts whose database is on this server.
func (r *rules) liveScripts() []*keyspec.Script {
	var out []*keyspec.Script
	for _, s := range r.spec.ScriptsOf(r.in) {
		if s.DB == nil || s.DB.ServerOf() == r.srv {
			out = append(out, s)
		}
	}
	return out
}

func scriptNames(ss []*keyspec.Script) []string {
	out := names(ss, func(s *keyspec.Script) string { return s.Name })
	sort.Strings(out)
	return out
}

// names are the names of the entries xs, in their order.
func names[T any](xs []T, name func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, name(x))
	}
	return out
}

func regexOf(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexpQuote(n)
	}
	return strings.Join(q, "|")
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, c) {
			b.WriteRune('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// busyMS is the generated busy-reply-threshold, for the busy rule's text.
var busyMS = serverconf.BusyReplyThresholdMS

// ExporterCommands are what prometheus-redis-exporter runs on a scrape (its
// INFO, CONFIG GET of maxmemory and databases, SLOWLOG and LATENCY readings,
// its client name and PING), as an ACL rule: give its user exactly these
// (docs/operations.md); it reads no key and runs no script. The monitoring
// test scrapes through a user with only these and finds no scrape error and
// no denied command.
const ExporterCommands = "-@all +ping +info +config|get +client|setname +slowlog|get +slowlog|len +latency|latest"

// ExporterUser is the name docs/operations.md gives the exporter's user.
func ExporterUser(in *keyspec.Instance) string { return in.Name + "_exporter" }
