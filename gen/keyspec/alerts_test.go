package keyspec_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
)

const alertsFixture = "testdata/alerts.yaml"

// The alerts: of testdata/alerts.yaml resolve, in the order declared, each to
// the instance and server holding the entry it is about (a key on the split
// instance's other server goes there), with its test, its for: (absent: 0)
// and its source (absent: the about path).
func TestAlertsParse(t *testing.T) {
	spec, err := keyspec.Load(alertsFixture)
	if err != nil {
		t.Fatal(err)
	}
	in := spec.Instance("a")
	other := in.ServerNamed("other")
	type want struct {
		name, severity, about, source string
		aboutLine                     int
		server                        *keyspec.Server
		forD                          time.Duration
		fire, quiet                   []keyspec.AlertSeries
		labels                        map[string]string
	}
	cases := []want{
		{"NewsSubscribersGone", "critical", "channels.t_news", "channels.t_news (the gateway: news_subscribers)", 42, &in.Server, 2 * time.Minute,
			[]keyspec.AlertSeries{{Series: "news_subscribers", Values: "2x20 0x20"}}, []keyspec.AlertSeries{{Series: "news_subscribers", Values: "2x40"}}, nil},
		{"JobsBacklog", "warning", "keys.q_jobs", "keys.q_jobs", 35, other, 0,
			[]keyspec.AlertSeries{{Series: `jobs_pending{queue="q"}`, Values: "101x40"}}, []keyspec.AlertSeries{{Series: `jobs_pending{queue="q"}`, Values: "100x40"}}, map[string]string{"queue": "q"}},
		{"PutSlow", "info", "scripts.put", "scripts.put", 47, &in.Server, 24 * time.Hour,
			[]keyspec.AlertSeries{{Series: `put_seconds_bucket{le="+Inf"}`, Values: "0+1x40"}}, []keyspec.AlertSeries{{Series: `put_seconds_bucket{le="+Inf"}`, Values: "0x40"}}, nil},
		{"AppDown", "critical", "instances.a", "instances.a", 5, &in.Server, 0,
			[]keyspec.AlertSeries{{Series: `up{job="app"}`, Values: "0x40"}}, []keyspec.AlertSeries{{Series: `up{job="app"}`, Values: "1x40"}}, map[string]string{"job": "app"}},
	}
	if len(spec.Alerts) != len(cases) {
		t.Fatalf("%d alerts, want %d", len(spec.Alerts), len(cases))
	}
	for i, w := range cases {
		a := spec.Alerts[i]
		if a.Name != w.name || a.Severity != w.severity || a.About != w.about || a.Source != w.source || a.For != w.forD {
			t.Errorf("alert %d: %s %s %s %q %v, want %+v", i, a.Name, a.Severity, a.About, a.Source, a.For, w)
		}
		if a.AboutPos.Line != w.aboutLine || a.AboutPos.File != "alerts.yaml" || a.Instance != in || a.Server != w.server {
			t.Errorf("%s: about at %v on %s server %q, want line %d", a.Name, a.AboutPos, a.Instance.Name, a.Server.Name, w.aboutLine)
		}
		if !reflect.DeepEqual(a.Test.Fire, w.fire) || !reflect.DeepEqual(a.Test.Quiet, w.quiet) || !reflect.DeepEqual(a.Test.Labels, w.labels) {
			t.Errorf("%s: test %+v", a.Name, a.Test)
		}
	}
	if a := spec.Alerts[0]; a.Line != 55 || !strings.Contains(a.Expr, "[$long_window]") || a.Summary != "No gateway listens on the news" {
		t.Errorf("NewsSubscribersGone: line %d, expr %q, summary %q", a.Line, a.Expr, a.Summary)
	}
	names := func(as []*keyspec.Alert) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.Name)
		}
		return out
	}
	if got := names(spec.AlertsOf(in, &in.Server)); !reflect.DeepEqual(got, []string{"NewsSubscribersGone", "PutSlow", "AppDown"}) {
		t.Errorf("alerts of a's own server: %v", got)
	}
	if got := names(spec.AlertsOf(in, other)); !reflect.DeepEqual(got, []string{"JobsBacklog"}) {
		t.Errorf("alerts of server other: %v", got)
	}
}

// Each misuse of alerts: is refused at its line, naming the alert.
func TestAlertErrors(t *testing.T) {
	base, err := os.ReadFile(alertsFixture)
	if err != nil {
		t.Fatal(err)
	}
	const first = "  - alert: NewsSubscribersGone\n"
	for _, c := range []invalidCase{
		{"unknown_field", []edit{{"    for: 2m\n", "    for: 2m\n    colour: red\n"}},
			`keyspec.yaml:61: field colour not found in an alert`},
		{"unknown_test_field", []edit{{"      quiet: [{series: news_subscribers, values: \"2x40\"}]\n", "      quiet: [{series: news_subscribers, values: \"2x40\"}]\n      at: 35m\n"}},
			`keyspec.yaml:68: field at not found in an alert's test`},
		{"unknown_series_field", []edit{{"{series: news_subscribers, values: \"2x40\"}", "{series: news_subscribers, value: \"2x40\"}"}},
			`keyspec.yaml:67: field value not found in a test series`},
		{"bad_duration", []edit{{"    for: 2m\n", "    for: two minutes\n"}},
			`keyspec.yaml:60: alert "NewsSubscribersGone": for: duration "two minutes": want a Go duration (30s, 24h) or whole days (30d)`},
		{"negative_duration", []edit{{"    for: 2m\n", "    for: -2m\n"}},
			`keyspec.yaml:60: alert "NewsSubscribersGone": for -2m must be positive`},
		{"about_unknown_entry", []edit{{"    about: channels.t_news\n", "    about: channels.t_newz\n"}},
			`keyspec.yaml:56: alert "NewsSubscribersGone": about "channels.t_newz": channels has no entry "t_newz"`},
		{"about_unknown_section", []edit{{"    about: channels.t_news\n", "    about: users.u\n"}},
			`keyspec.yaml:56: alert "NewsSubscribersGone": about "users.u": want channels.NAME, keys.NAME, scripts.NAME or instances.NAME`},
		{"about_missing", []edit{{"    about: channels.t_news\n", ""}},
			`keyspec.yaml:55: alert "NewsSubscribersGone": about is missing: the entry the alert watches (channels.NAME, keys.NAME, scripts.NAME or instances.NAME)`},
		{"duplicate_name", []edit{{"  - alert: JobsBacklog\n", "  - alert: NewsSubscribersGone\n"}},
			`keyspec.yaml:68: alert "NewsSubscribersGone": alert NewsSubscribersGone is declared twice (also line 55)`},
		{"generated_name_luagen", []edit{{first, "  - alert: LuagenScriptErrorRate\n"}},
			`keyspec.yaml:55: alert "LuagenScriptErrorRate": names starting with Redis or Luagen are the rules luagen alerts derives itself: name the alert after its service`},
		{"generated_name_redis", []edit{{first, "  - alert: RedisDown\n"}},
			`keyspec.yaml:55: alert "RedisDown": names starting with Redis or Luagen are the rules luagen alerts derives itself: name the alert after its service`},
		{"bad_name", []edit{{first, "  - alert: news-gone\n"}},
			`keyspec.yaml:55: alert "news-gone": name must be [A-Za-z_][A-Za-z0-9_]* (a Prometheus alert name)`},
		{"name_missing", []edit{{first, "  - alert: \"\"\n"}},
			`keyspec.yaml:55: alerts[0]: alert is missing: the alert's name`},
		{"severity", []edit{{"    severity: critical\n    expr: \"sum(news", "    severity: Page me\n    expr: \"sum(news"}},
			`keyspec.yaml:58: alert "NewsSubscribersGone": severity "Page me": want one lower-case word (critical, warning, info)`},
		{"unknown_placeholder", []edit{{"[$long_window]", "[$range]"}},
			`keyspec.yaml:59: alert "NewsSubscribersGone": expr: "$range" is not a placeholder: want $window or $long_window`},
		{"expr_missing", []edit{{"    expr: \"sum(news_subscribers) < 1 and sum(max_over_time(news_subscribers[$long_window])) > 0\"\n", ""}},
			`keyspec.yaml:55: alert "NewsSubscribersGone": expr is missing: the PromQL expression that fires the alert`},
		{"summary_missing", []edit{{"    summary: No gateway listens on the news\n", ""}},
			`keyspec.yaml:55: alert "NewsSubscribersGone": summary is missing: what is wrong, in one line`},
		{"runbook_missing", []edit{{"    runbook: >-\n      The news are stored but pushed to nobody:\n      check the gateways.\n", ""}},
			`keyspec.yaml:55: alert "NewsSubscribersGone": runbook is missing: what the operator checks and does`},
		{"test_missing", []edit{{"    test:\n      fire: [{series: news_subscribers, values: \"2x20 0x20\"}]\n      quiet: [{series: news_subscribers, values: \"2x40\"}]\n", ""}},
			`keyspec.yaml:55: alert "NewsSubscribersGone": test is missing: the series under which the alert fires (fire:) and stays quiet (quiet:), for its promtool unit test`},
		{"test_quiet_missing", []edit{{"      quiet: [{series: news_subscribers, values: \"2x40\"}]\n", ""}},
			`keyspec.yaml:65: alert "NewsSubscribersGone": test quiet is missing: at least one input series {series, values}`},
		{"test_series_empty", []edit{{"{series: news_subscribers, values: \"2x20 0x20\"}", "{series: news_subscribers}"}},
			`keyspec.yaml:66: alert "NewsSubscribersGone": test fire[0]: set series (a selector, name{label="v"}) and values (promtool's notation, 0+1x40)`},
		{"test_label_of_the_rule", []edit{{"      labels: {queue: q}\n", "      labels: {queue: q, severity: warning}\n"}},
			`keyspec.yaml:77: alert "JobsBacklog": test label severity is the rule's own (alertname, luagen_instance, luagen_server, severity, source): list only the labels the expression keeps`},
		{"test_label_name", []edit{{"      labels: {queue: q}\n", "      labels: {queue-name: q}\n"}},
			`keyspec.yaml:77: alert "JobsBacklog": test label "queue-name": want a Prometheus label name [A-Za-z_][A-Za-z0-9_]*`},
		// Found red-teaming alerts: (each refused at its spec line, not left
		// to promtool or Prometheus to trip over).
		{"test_label_alertname", []edit{{"      labels: {queue: q}\n", "      labels: {queue: q, alertname: X}\n"}},
			`keyspec.yaml:77: alert "JobsBacklog": test label alertname is the rule's own (alertname, luagen_instance, luagen_server, severity, source): list only the labels the expression keeps`},
		{"test_label_reserved", []edit{{"      labels: {queue: q}\n", "      labels: {queue: q, __name__: x}\n"}},
			`keyspec.yaml:77: alert "JobsBacklog": test label __name__: names starting with __ are Prometheus' own, which no alert carries`},
		{"test_label_empty", []edit{{"      labels: {queue: q}\n", "      labels: {queue: ''}\n"}},
			`keyspec.yaml:77: alert "JobsBacklog": test label queue is empty: an empty label is no label (leave it out)`},
		{"about_cut_over_key", []edit{
			{"      db1: {index: 1, url_env: A1_URL, user: v, server: other}\n", "      db1: {index: 1, url_env: A1_URL, user: v, server: other}\n      db2: {index: 2, url_env: A2_URL, user: u, legacy: {state: cut_over}}\n"},
			{"\nkeys:\n", "\nkeys:\n  t_old:\n    db: a.db2\n    pattern: \"t:old\"\n    value: [string]\n    ttl: {rule: fixed, value: 1h}\n"},
			{"    about: keys.q_jobs\n", "    about: keys.t_old\n"}},
			`keyspec.yaml:75: alert "JobsBacklog": about "keys.t_old": its database a.db2 is cut over (legacy: {state: cut_over}): nothing of it runs to alert about`},
		{"null_alert", []edit{{"  - alert: JobsBacklog\n", "  -\n  - alert: JobsBacklog\n"}},
			`keyspec.yaml:68: a null list item (an empty '-', ~ or null) where an alert is expected: fill it in or remove it`},
		{"for_overflow", []edit{{"    for: 2m\n", "    for: 213504d\n"}},
			`keyspec.yaml:60: alert "NewsSubscribersGone": for: duration "213504d": more days than a duration holds (at most 106751)`},
		{"for_too_long", []edit{{"    for: 1d\n", "    for: 8d\n"}},
			`keyspec.yaml:82: alert "PutSlow": for 8d: at most 168h0m0s (an alert that must hold longer is a report, not an alert)`},
		{"expr_unclosed", []edit{{"> 0\"\n    for: 2m", "\"\n    for: 2m"}, {"[$long_window])) \"", "[$long_window]) \""}},
			`keyspec.yaml:59: alert "NewsSubscribersGone": expr: '(' is never closed`},
		{"expr_closes_nothing", []edit{{`"max by (queue) (jobs_pending) > 100"`, `"max by (queue) (jobs_pending]) > 100"`}},
			`keyspec.yaml:71: alert "JobsBacklog": expr: ']' at offset 28 closes nothing open`},
		{"expr_string_unclosed", []edit{{`"up{job=\"app\"} == 0"`, `"up{job=\"app} == 0"`}},
			`keyspec.yaml:91: alert "AppDown": expr: string "app} == 0 is never closed`},
		{"runbook_template", []edit{{"    runbook: Add workers.\n", "    runbook: \"Add workers for {{ $labels.queue }}.\"\n"}},
			`keyspec.yaml:73: alert "JobsBacklog": runbook: "{{" would start a Prometheus template: luagen writes the text as declared, not as a template; write it without "{{"`},
		{"summary_template", []edit{{"    summary: More than 100 jobs wait\n", "    summary: \"{{ $value }} jobs wait\"\n"}},
			`keyspec.yaml:72: alert "JobsBacklog": summary: "{{" would start a Prometheus template: luagen writes the text as declared, not as a template; write it without "{{"`},
		{"source_template", []edit{{`    source: "channels.t_news (the gateway: news_subscribers)"`, `    source: "channels.t_news {{ x }}"`}},
			`keyspec.yaml:57: alert "NewsSubscribersGone": source: "{{" would start a Prometheus template: luagen writes the text as declared, not as a template; write it without "{{"`},
		{"runbook_control", []edit{{"    runbook: Add workers.\n", "    runbook: \"Add\\aworkers.\"\n"}},
			`keyspec.yaml:73: alert "JobsBacklog": runbook: control character U+0007`},
		{"summary_bidi", []edit{{"    summary: More than 100 jobs wait\n", "    summary: \"More than 100 jobs \\u202ewait\"\n"}},
			`keyspec.yaml:72: alert "JobsBacklog": summary: invisible or bidirectional-text control U+202E (the text would read otherwise than it parses)`},
		{"series_bad_labels", []edit{{`{series: 'jobs_pending{queue="q"}', values: "101x40"}`, `{series: 'jobs_pending{queue=q}', values: "101x40"}`}},
			`keyspec.yaml:75: alert "JobsBacklog": test fire[0]: series "jobs_pending{queue=q}": want labels label="value", separated by commas`},
		{"series_matcher", []edit{{`{series: 'jobs_pending{queue="q"}', values: "101x40"}`, `{series: 'jobs_pending{queue!="q"}', values: "101x40"}`}},
			`keyspec.yaml:75: alert "JobsBacklog": test fire[0]: series "jobs_pending{queue!=\"q\"}": want labels label="value", separated by commas`},
		{"series_name", []edit{{`{series: 'jobs_pending{queue="q"}', values: "101x40"}`, `{series: 'jobs pending', values: "101x40"}`}},
			`keyspec.yaml:75: alert "JobsBacklog": test fire[0]: series "jobs pending": want a metric name and its labels, name{label="v"}`},
		{"values_notation", []edit{{`values: "101x40"`, `values: "101 x40"`}},
			`keyspec.yaml:75: alert "JobsBacklog": test fire[0]: values "101 x40": "x40": want promtool's notation (1, 1x5, 0+1x40, 9-1x9, _, stale)`},
		{"values_growth_without_count", []edit{{`values: "101x40"`, `values: "0+1"`}},
			`keyspec.yaml:75: alert "JobsBacklog": test fire[0]: values "0+1": "0+1": want promtool's notation (1, 1x5, 0+1x40, 9-1x9, _, stale)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := keyspec.Parse("keyspec.yaml", []byte(c.apply(t, string(base))))
			if err == nil {
				t.Fatal("parsed without error")
			}
			if !errors.Is(err, keyspec.ErrInvalid) {
				t.Errorf("error does not match ErrInvalid: %v", err)
			}
			if got, _, _ := strings.Cut(err.Error(), "\n"); got != c.want {
				t.Errorf("first error:\n got: %s\nwant: %s", got, c.want)
			}
		})
	}
}

// A $ inside a string of the expr is the string's own (label_replace's "$1"),
// not a placeholder; a bracket or # inside a string is no bracket or comment.
func TestAlertExprKeepsWhatItsStringsHold(t *testing.T) {
	base, err := os.ReadFile(alertsFixture)
	if err != nil {
		t.Fatal(err)
	}
	expr := `"max by (queue) (label_replace(jobs_pending{queue!~\"[(#\"}, \"queue\", \"$1\", \"q\", \"(.*)\")) > 100"`
	src := strings.Replace(string(base), `"max by (queue) (jobs_pending) > 100"`, expr, 1)
	spec, err := keyspec.Parse("keyspec.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Alerts[1].Expr; !strings.Contains(got, `"$1"`) {
		t.Errorf("expr %s", got)
	}
	// Placeholders are replaced outside the strings only.
	a := &keyspec.Alert{Expr: `rate(x{l="$window"}[$window]) > 0 and max_over_time(y[$long_window]) # $window`}
	if got, want := a.ExprWith("5m", "1h"), `rate(x{l="$window"}[5m]) > 0 and max_over_time(y[1h]) # $window`; got != want {
		t.Errorf("ExprWith: %s, want %s", got, want)
	}
}
