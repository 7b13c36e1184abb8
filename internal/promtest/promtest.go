// Package promtest is what tests share about monitoring: reading Prometheus
// metrics back from a registry, checking generated alert rules with promtool
// and generated dashboards against their spec.
package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value is the value of the counter or gauge series name{labels} in g: the
// series whose labels are exactly labels (nil: none). It is 0 when absent.
func Value(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	for _, m := range series(t, g, name) {
		if len(m.GetLabel()) != len(labels) || !hasLabels(m.GetLabel(), labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// Sum adds the counters of every series of name whose labels include match.
func Sum(t testing.TB, g prometheus.Gatherer, name string, match map[string]string) float64 {
	t.Helper()
	total := 0.0
	for _, m := range series(t, g, name) {
		if hasLabels(m.GetLabel(), match) {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// Labels calls f with every label of every series g gathers, for checks that
// no label value carries what it must not (a user id, a hash, a secret).
func Labels(t testing.TB, g prometheus.Gatherer, f func(metric, label, value string)) {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				f(fam.GetName(), l.GetName(), l.GetValue())
			}
		}
	}
}

func series(t testing.TB, g prometheus.Gatherer, name string) []*dto.Metric {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

// hasLabels reports whether got holds every name=value of match.
func hasLabels(got []*dto.LabelPair, match map[string]string) bool {
	n := 0
	for _, l := range got {
		if v, ok := match[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(match)
}
