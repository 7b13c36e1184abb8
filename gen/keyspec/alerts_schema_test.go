package keyspec

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The schema holds alerts: as the parser does: testdata/alerts.yaml is valid
// (TestSchemaAcceptsEverySpecInTheRepository), and an editor is told of a
// derived rule's name, an unknown field, a missing test and an empty series.
func TestSchemaRefusesWhatTheParserRefusesInAlerts(t *testing.T) {
	schema := compileSchema(t)
	valid, err := os.ReadFile("testdata/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ old, new string }{
		{"  - alert: NewsSubscribersGone\n", "  - alert: RedisNewsGone\n"},
		{"  - alert: NewsSubscribersGone\n", "  - alert: LuagenNewsGone\n"},
		{"    for: 2m\n", "    for: 2m\n    colour: red\n"},
		{"    for: 2m\n", "    for: two minutes\n"},
		{"    about: channels.t_news\n", "    about: t_news\n"},
		{"    test:\n      fire: [{series: news_subscribers, values: \"2x20 0x20\"}]\n      quiet: [{series: news_subscribers, values: \"2x40\"}]\n", "\n"},
		{"      quiet: [{series: news_subscribers, values: \"2x40\"}]\n", "      quiet: []\n"},
		{"{series: news_subscribers, values: \"2x40\"}", "{series: news_subscribers}"},
	} {
		edited := strings.Replace(string(valid), bad.old, bad.new, 1)
		if edited == string(valid) {
			t.Fatalf("testdata/alerts.yaml no longer has %q", bad.old)
		}
		if err := schema.Validate(yamlInstance(t, []byte(edited))); err == nil {
			t.Errorf("the schema accepts %q", bad.new)
		}
	}
}

// The schema reads a test's series and values as the parser does (both as
// promtool does), but for an escape promtool refuses inside a label value,
// which only the parser sees; and it refuses the text Prometheus would
// template, a test label of the rule's own and an empty one.
func TestSchemaReadsAlertTestsAsTheParserDoes(t *testing.T) {
	schema := compileSchema(t)
	valid, err := os.ReadFile("testdata/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const series = `{series: 'jobs_pending{queue="q"}', values: "101x40"}`
	try := func(old, new string) error {
		edited := strings.Replace(string(valid), old, new, 1)
		if edited == string(valid) {
			t.Fatalf("testdata/alerts.yaml no longer has %q", old)
		}
		return schema.Validate(yamlInstance(t, []byte(edited)))
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, c := range []struct {
		list   []string
		accept bool
		edit   func(string) string
	}{
		{promtoolSeries, true, func(s string) string { return "{series: " + quote(s) + `, values: "101x40"}` }},
		{promtoolRefusesSeries, false, func(s string) string { return "{series: " + quote(s) + `, values: "101x40"}` }},
		{promtoolValues, true, func(v string) string { return `{series: a, values: ` + quote(v) + "}" }},
		{promtoolRefusesValues, false, func(v string) string { return `{series: a, values: ` + quote(v) + "}" }},
	} {
		for _, s := range c.list {
			if s == `a{b="\q"}` {
				continue
			}
			if err := try(series, c.edit(s)); (err == nil) != c.accept {
				t.Errorf("the schema's verdict on %q differs from the parser's: %v", s, err)
			}
		}
	}
	for _, d := range []string{"0", "+5m", "1h30m", "1.5h", ".5h", "300ms", "2d", "+2d", "10μs", "10µs"} {
		if _, err := Parse("keyspec.yaml", []byte(strings.Replace(string(valid), "    for: 2m\n", "    for: "+quote(d)+"\n", 1))); err != nil {
			t.Fatalf("for: %s: %v", d, err)
		}
		if err := try("    for: 2m\n", "    for: "+quote(d)+"\n"); err != nil {
			t.Errorf("the schema refuses for: %s, which the parser accepts: %v", d, err)
		}
	}
	for _, bad := range []struct{ old, new string }{
		{"    runbook: Add workers.\n", "    runbook: \"Add workers for {{ $labels.queue }}.\"\n"},
		{"    summary: More than 100 jobs wait\n", "    summary: \"{{ $value }} jobs wait\"\n"},
		{"    runbook: Add workers.\n", "    runbook: \"Add\\aworkers.\"\n"},
		{"    summary: More than 100 jobs wait\n", "    summary: \"More than 100 jobs \\u202ewait\"\n"},
		{"    summary: More than 100 jobs wait\n", "    summary: \"More than 100\\u0085jobs wait\"\n"},
		{"    summary: More than 100 jobs wait\n", "    summary: \"  \"\n"},
		{"      labels: {queue: q}\n", "      labels: {queue: q, alertname: X}\n"},
		{"      labels: {queue: q}\n", "      labels: {queue: q, __name__: x}\n"},
		{"      labels: {queue: q}\n", "      labels: {queue: ''}\n"},
		{"    for: 2m\n", "    for: 1.2.3m\n"},
	} {
		if try(bad.old, bad.new) == nil {
			t.Errorf("the schema accepts %q", bad.new)
		}
	}
}
