// Package keyspec_test holds the checks of HAN's and the examples' specs that
// used to sit beside the parser: the tool's own tests (gen/keyspec) run on
// fixtures of their own.
package keyspec_test

import (
	"os"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/internal/schematest"
)

// The real spec: everything DESIGN.md's key map lists is declared, resolved and
// owned by the right user.
func TestHANSpec(t *testing.T) {
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	patterns := map[string]string{}
	for _, k := range spec.Keys {
		patterns[k.Pattern.Raw] = k.DB.ID()
	}
	for pat, db := range map[string]string{
		"han:api:rl:user:{user_id}:{route_hash}:{window}":                      "vm1.db0",
		"han:api:rl:ip:{ip_hmac}:{route_hash}:{window}":                        "vm1.db0",
		"han:api:rl:dialog:{dialog_id}:message:{window}":                       "vm1.db0",
		"han:api:rl:service:{service}:{route_hash}:{window}":                   "vm1.db0",
		"han:api:jwks:negative:{kid_hash}":                                     "vm1.db0",
		"han:api:idem:{scope}:{user_id}:{key_hmac}":                            "vm1.db0",
		"han:api:idemlock:{scope}:{user_id}:{key_hmac}":                        "vm1.db0",
		"han:rt:conn:{connection_id}":                                          "vm1.db1",
		"han:rt:user:{user_id}:connections":                                    "vm1.db1",
		"han:coord:lock:safety-recovery:{task_id}":                             "vm1.db1",
		"han:coord:lock:delivery:{message_id}":                                 "vm1.db1",
		"han:coord:lock:settings-refresh:{instance}":                           "vm1.db1",
		"han:settings:snapshot:{version}":                                      "vm1.db1",
		"han:safety:rl:service:{caller}:{window}":                              "vm2.db0",
		"han:safety:text:{analysis_hash}:{rules_version}":                      "vm2.db0",
		"han:safety:verdict:{content_hash}:{config_version}:{detector_bundle}": "vm2.db0",
		"han:safety:link:{url_hash}:{rules_version}:{config_version}":          "vm2.db0",
		"han:safety:dns:{host_hash}:{rrtype}":                                  "vm2.db0",
	} {
		if patterns[pat] != db {
			t.Errorf("%s: in %q, want %s", pat, patterns[pat], db)
		}
	}
	for _, k := range spec.Keys {
		if k.TTL.Rule == "" {
			t.Errorf("key %s has no TTL rule", k.Name)
		}
		if k.Source == "" {
			t.Errorf("key %s names no source section", k.Name)
		}
	}
	urls := map[string]string{}
	for _, in := range spec.Instances {
		for _, d := range in.DBs {
			urls[d.URLEnv] = in.Name
		}
	}
	if urls["MESSAGE_SAFETY_REDIS_URL"] != "vm2" || urls["REDIS_URL"] != "vm1" || urls["REDIS_REALTIME_URL"] != "vm1" {
		t.Errorf("URL variables: %v", urls)
	}
	for _, name := range []string{"rate_limit_sliding", "rate_limit_fixed", "rate_limit_token_bucket", "idem_reserve", "idem_complete", "idem_release", "idem_extend", "lock_release", "lock_extend", "rt_heartbeat", "rt_cleanup", "stub_task_poll", "safety_rate_limit", "cache_set"} {
		if spec.Script(name) == nil {
			t.Errorf("script %s (named by the seeds) is not declared", name)
		}
	}
	if s := spec.Script("stub_task_poll"); s != nil && (s.DB.Legacy == nil || s.Instance.Name != "vm1") {
		t.Error("the get+increment poll must live in VM1's legacy DB")
	}
}

// HAN's spec and the examples' parse and are valid against the schema editors
// use (docs/keyspec.schema.json).
func TestRepositorySpecsMatchTheSchema(t *testing.T) {
	schema := schematest.Compile(t, "../../../docs/keyspec.schema.json")
	for _, path := range []string{"../../../keyspec.yaml", "../../../examples/cacheservice/keyspec.yaml", "../../../examples/apiservice/keyspec.yaml", "../../../examples/jobqueue/keyspec.yaml"} {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := keyspec.Parse("keyspec.yaml", src); err != nil {
			t.Errorf("%s does not parse: %v", path, err)
			continue
		}
		if err := schema.Validate(schematest.Instance(t, src)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// BenchmarkParseHAN parses HAN's spec (some 58 KB): what luagen breaking and
// luagen diff do twice, and every other command once.
func BenchmarkParseHAN(b *testing.B) {
	src, err := os.ReadFile("../../../keyspec.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := keyspec.Parse("keyspec.yaml", src); err != nil {
			b.Fatal(err)
		}
	}
}
