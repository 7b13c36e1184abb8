package alerts_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/alerts"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/internal/promtest"
	"go.yaml.in/yaml/v3"
)

func declaredFixture(t testing.TB) *keyspec.Spec {
	t.Helper()
	spec, err := keyspec.Load("testdata/declared/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// declaredRule is the one rule of the services group of f.
func declaredRule(t *testing.T, f *alerts.File) *alerts.Rule {
	t.Helper()
	for _, g := range f.Groups {
		if g.Name == "luagen-a-services" {
			if len(g.Rules) != 1 {
				t.Fatalf("group %s: %d rules, want the one declared", g.Name, len(g.Rules))
			}
			return g.Rules[0]
		}
	}
	t.Fatal("no group luagen-a-services")
	return nil
}

// The alert the spec declares (alerts:) is written as declared, after the
// derived rules: its windows filled in (shortened ones too, and its for:
// scaled), its source the line of the entry it is about, its runbook as
// written (no docs/operations.md link: that is luagen's own rules').
func TestDeclaredAlertIsWrittenAsDeclared(t *testing.T) {
	spec := declaredFixture(t)
	in := spec.Instance("a")
	f, _, err := alerts.Rules(spec, in, alerts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Groups); n < 2 || f.Groups[n-2].Name != "luagen-a-services" || f.Groups[n-1].Name != "luagen-a-recording" {
		t.Errorf("the services group is not the last before the recording rules: %v", f.Groups)
	}
	r := declaredRule(t, f)
	want := &alerts.Rule{Alert: "JobsBehind",
		Expr:        "sum by (queue) (rate(jobs_done_total[5m])) < 0.5 * sum by (queue) (max_over_time(jobs_pending[1h]) > 0)",
		For:         "10m",
		Labels:      map[string]string{"severity": "warning", "luagen_instance": "a", "source": "keyspec.yaml:16 keys.q_jobs (the workers: jobs_done_total)"},
		Annotations: map[string]string{"summary": "The workers finish fewer jobs than half the queue's peak per second", "runbook": "Add workers or find the handler that blocks: docs/jobs.md#behind."}}
	if got, _ := yaml.Marshal(r); string(got) != string(must(yaml.Marshal(want))) {
		t.Errorf("rule:\n%s\nwant:\n%s", got, must(yaml.Marshal(want)))
	}

	short, _, err := alerts.Rules(spec, in, alerts.Options{Window: 15 * time.Second, LongWindow: 2 * time.Minute, ForFactor: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if r := declaredRule(t, short); r.Expr != "sum by (queue) (rate(jobs_done_total[15s])) < 0.5 * sum by (queue) (max_over_time(jobs_pending[2m]) > 0)" || r.For != "5m" {
		t.Errorf("with shortened windows: expr %s, for %s", r.Expr, r.For)
	}

	tests, err := f.Tests("a.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			Name        string              `yaml:"name"`
			InputSeries []map[string]string `yaml:"input_series"`
			AlertTests  []struct {
				ExpAlerts []struct {
					ExpLabels map[string]string `yaml:"exp_labels"`
				} `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(tests, &tf); err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, c := range tf.Tests {
		if !strings.HasSuffix(c.Name, " JobsBehind fires") && !strings.HasSuffix(c.Name, " JobsBehind stays quiet") {
			continue
		}
		found = append(found, c.Name)
		done := map[bool]string{true: "0+0x40", false: "0+600x40"}[strings.HasSuffix(c.Name, "fires")]
		if want := []map[string]string{{"series": `jobs_done_total{queue="mail"}`, "values": done}, {"series": `jobs_pending{queue="mail"}`, "values": "5x40"}}; !reflect.DeepEqual(c.InputSeries, want) {
			t.Errorf("%s: input series %v, want %v", c.Name, c.InputSeries, want)
		}
		exp := c.AlertTests[0].ExpAlerts
		if strings.HasSuffix(c.Name, "fires") {
			want := map[string]string{"queue": "mail", "severity": "warning", "luagen_instance": "a", "source": r.Labels["source"]}
			if len(exp) != 1 || !reflect.DeepEqual(exp[0].ExpLabels, want) {
				t.Errorf("%s: expected alerts %v, want labels %v", c.Name, exp, want)
			}
		} else if len(exp) != 0 {
			t.Errorf("%s: expects alerts %v", c.Name, exp)
		}
	}
	if len(found) != 2 {
		t.Errorf("unit tests of JobsBehind: %v, want one that fires and one that stays quiet", found)
	}
}

// The declared alert passes promtool check rules and fires and stays quiet
// under promtool test rules as its test says.
func TestPromtoolChecksAndTestsTheDeclaredAlert(t *testing.T) {
	promtest.CheckRules(t, declaredFixture(t), 14)
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// On a split instance each declared alert goes into the rules of the server
// holding the entry it is about (a key's database's server, a channel's
// server), and the rules of every server, the instance's own included, pass
// promtool test rules: the own server's exporter targets carry no
// luagen_server label, so its alerts carry none either.
func TestDeclaredAlertsOfASplitInstanceGoToTheirServers(t *testing.T) {
	spec, err := keyspec.Load("testdata/split/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := spec.Instance("a")
	for srv, want := range map[string]string{"": "JobsFailing JobsStuck", "rt": "EventsSubscribersGone"} {
		f, _, err := alerts.Rules(spec, in, alerts.Options{Server: srv})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, g := range f.Groups {
			if strings.HasSuffix(g.Name, "-services") {
				for _, r := range g.Rules {
					got = append(got, r.Alert)
				}
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("server %q: declared alerts %v, want [%s]", srv, got, want)
		}
		if srv != "" {
			continue
		}
		// An alert that waits longer than the tests' 35m is looked at 5m
		// after its for:, the others at 35m.
		tests, err := f.Tests("a.rules.yml")
		if err != nil {
			t.Fatal(err)
		}
		var tf struct {
			Tests []struct {
				Name       string `yaml:"name"`
				AlertTests []struct {
					EvalTime string `yaml:"eval_time"`
				} `yaml:"alert_rule_test"`
			} `yaml:"tests"`
		}
		if err := yaml.Unmarshal(tests, &tf); err != nil {
			t.Fatal(err)
		}
		for _, c := range tf.Tests {
			at := "35m"
			if strings.Contains(c.Name, "JobsStuck") {
				at = "65m"
			}
			if c.AlertTests[0].EvalTime != at {
				t.Errorf("%s: evaluated at %s, want %s", c.Name, c.AlertTests[0].EvalTime, at)
			}
		}
	}
	// promtool accepts the rules (a runbook with quotes, #, : and {}) and
	// their tests pass.
	promtest.CheckRules(t, spec, 20)
}
