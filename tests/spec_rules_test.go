package tests

import (
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/lint"
)

// HAN's rule "every key expires" and Elang's "a key kept forever, and every
// stream, is bounded" are the specs' own (forbid rules in keyspec.yaml), not
// luagen's: the tool accepts durable keys, and luagen lint fails HAN's spec the
// moment one of its keys goes without a TTL, and Elang's when a key kept
// forever or a stream loses its bound.
func TestHANAndElangDeclareTheirExpiryRules(t *testing.T) {
	src, err := os.ReadFile("../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lintOf := func(spec string) string {
		var b strings.Builder
		for _, f := range lint.Run("keyspec.yaml", []byte(spec), os.DirFS("../lua"), "lua") {
			b.WriteString(f.String() + "\n")
		}
		return b.String()
	}
	if got := lintOf(string(src)); got != "" {
		t.Fatalf("keyspec.yaml has lint findings:\n%s", got)
	}
	for name, tc := range map[string]struct{ old, new, want string }{
		"a VM1 key without a TTL": {
			"    ttl: {rule: window_jitter, max_jitter: 2s}\n  api_rl_ip:", "    ttl: {rule: none, reason: kept}\n  api_rl_ip:",
			`forbidden-ttl: key "api_rl_user" never expires (ttl none: kept), but vm1 says every key expires (HAN VM1 spec §12: all application keys have a TTL)`},
		"a VM2 key without a TTL": {
			"    ttl: {rule: clamped, max: 900s, from: the DNS answer}\n", "    ttl: {rule: none, reason: kept}\n",
			`forbidden-ttl: key "safety_dns" never expires (ttl none: kept), but vm2 says every key expires (HAN VM2 spec §8`},
		"an Elang stream without its bound": {
			"    max_len: 100000\n", "",
			`forbidden-ttl: key "outbox_stream" never expires and declares no bound the tool checks`},
	} {
		t.Run(name, func(t *testing.T) {
			if strings.Count(string(src), tc.old) != 1 {
				t.Fatalf("keyspec.yaml no longer has %q once", tc.old)
			}
			got := lintOf(strings.Replace(string(src), tc.old, tc.new, 1))
			if !strings.Contains(got, tc.want) {
				t.Fatalf("lint output:\n%s\nwant a finding with %q", got, tc.want)
			}
		})
	}
}
