package alerts

import (
	"fmt"
	"sort"

	"github.com/hanchat/luagen/gen/keyspec"
	"go.yaml.in/yaml/v3"
)

// The promtool unit-test file (promtool test rules) of a rule file: for each
// alert, one test whose synthetic series make it fire (with exactly the
// labels and annotations expected) and one whose series keep it quiet.
type testFile struct {
	RuleFiles          []string   `yaml:"rule_files"`
	EvaluationInterval string     `yaml:"evaluation_interval"`
	Tests              []testCase `yaml:"tests"`
}

type testCase struct {
	Name        string       `yaml:"name"`
	Interval    string       `yaml:"interval"`
	InputSeries []inputSerie `yaml:"input_series"`
	AlertTests  []alertTest  `yaml:"alert_rule_test"`
}

type inputSerie struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type alertTest struct {
	EvalTime  string     `yaml:"eval_time"`
	AlertName string     `yaml:"alertname"`
	ExpAlerts []expAlert `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

// Tests renders the promtool unit tests of f, whose rules file is ruleFile
// (relative to the test file). Every alert of f has a probe (a rule without
// one is an error: each alert must be provable).
func (f *File) Tests(ruleFile string) ([]byte, error) {
	tf := testFile{RuleFiles: []string{ruleFile}, EvaluationInterval: "1m"}
	for _, g := range f.Groups {
		for i, rl := range g.Rules {
			if rl.Alert == "" {
				continue
			}
			if rl.probe == nil {
				return nil, fmt.Errorf("alerts: rule %s of group %s has no probe", rl.Alert, g.Name)
			}
			id := fmt.Sprintf("%s #%d %s", g.Name, i, rl.Alert)
			evalTime := promDuration(max(rl.probe.at, keyspec.AlertTestEval))
			want := map[string]string{}
			for k, v := range rl.probe.want {
				want[k] = v
			}
			for k, v := range rl.Labels {
				want[k] = v
			}
			tf.Tests = append(tf.Tests,
				testCase{Name: id + " fires", Interval: "1m", InputSeries: inputs(rl.probe.fire),
					AlertTests: []alertTest{{EvalTime: evalTime, AlertName: rl.Alert, ExpAlerts: []expAlert{{ExpLabels: want, ExpAnnotations: rl.Annotations}}}}},
				testCase{Name: id + " stays quiet", Interval: "1m", InputSeries: inputs(rl.probe.quiet),
					AlertTests: []alertTest{{EvalTime: evalTime, AlertName: rl.Alert, ExpAlerts: []expAlert{}}}},
			)
		}
	}
	return yaml.Marshal(tf)
}

func inputs(ss []series) []inputSerie {
	out := make([]inputSerie, len(ss))
	for i, s := range ss {
		out[i] = inputSerie{Series: s.name, Values: s.values}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Series < out[j].Series })
	return out
}
