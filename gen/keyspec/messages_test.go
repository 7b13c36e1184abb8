package keyspec_test

import (
	"os"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
)

// Each case is testdata/valid.yaml with one mistake and every error Parse
// reports for it, exactly (issue 25): a comma that split an unquoted string in
// a flow map is named as such, and after the first error of an entry its
// knock-on errors are dropped.
func TestMessagesOfIssue25(t *testing.T) {
	base, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []invalidCase{
		{"flow_map_comma", []edit{{"      db0: {index: 0, url_env: A_URL, user: u}\n", "      db0: {index: 0, url_env: A_URL, user: u, doc: scores, leaderboards}\n"}},
			`keyspec.yaml:7: field leaderboards not found in a db: a comma ended the unquoted string of doc ("scores") and made leaderboards a field of its own; in a flow map {...} quote a string holding ", ": doc: "scores, leaderboards"`},
		{"flow_map_two_commas", []edit{{"      db0: {index: 0, url_env: A_URL, user: u}\n", "      db0: {index: 0, url_env: A_URL, doc: scores, leaderboards, ranks, user: u}\n"}},
			`keyspec.yaml:7: field leaderboards not found in a db: a comma ended the unquoted string of doc ("scores") and made leaderboards a field of its own; in a flow map {...} quote a string holding ", ": doc: "scores, leaderboards, ranks"`},
		{"unknown_field_in_type", []edit{{"      db0: {index: 0, url_env: A_URL, user: u}\n", "      db0: {index: 0, url_env: A_URL, user: u, colour: red}\n"}},
			`keyspec.yaml:7: field colour not found in a db`},
		// "in type legacy" never matched the renamed fields' key "in legacy": their hint is shown now.
		{"renamed_field_hint", []edit{{"      db0: {index: 0, url_env: A_URL, user: u}\n", "      db0: {index: 0, url_env: A_URL, user: u, legacy: {state: alive, poll_budget: 20m}}\n"}},
			`keyspec.yaml:7: field poll_budget not found in legacy: a budget is now the TTL's floor: ttl: {..., exceeds: 20m} on each key of the database`},
		// The key's TTL error only: the script's ttl_of of it once said `has a  TTL`.
		{"ttl_rule_empty", []edit{{"    ttl: {rule: fixed, value: 1h}\n", "    ttl: {rule: , value: 1h}\n"}},
			`keyspec.yaml:37: key "t_item": ttl rule is missing: want fixed, window_jitter, heartbeat, clamped or none`},
		{"shared_placeholder_after_typo", []edit{{"      - {name: item, one_of: [t_item]}\n", "      - {name: item, one_of: [t_item]}\n      - {name: other, one_of: [t_itme]}\n    shared_placeholders: [id]\n"}},
			`keyspec.yaml:58: script "put" KEYS[2] "other": key "t_itme" is not declared`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := keyspec.Parse("keyspec.yaml", []byte(c.apply(t, string(base))))
			if err == nil {
				t.Fatal("parsed without error")
			}
			if err.Error() != c.want {
				t.Errorf("errors:\n got: %s\nwant: %s", err, c.want)
			}
		})
	}
}
