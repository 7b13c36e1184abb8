package keyspec

import (
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
