package keyspec_test

import (
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
)

func TestValidFixtureParses(t *testing.T) {
	spec, err := keyspec.Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	put := spec.Script("put")
	if put == nil || put.DB == nil || put.DB.ID() != "a.db0" || put.Argv[1].TTLOf != spec.Key("t_item") {
		t.Fatalf("script not resolved: %+v", put)
	}
	if put.ReplaySafe != "a second SET of the same value and TTL leaves the same state" || !put.Replayable() {
		t.Errorf("replay_safe = %q (replayable %v), want the reason trimmed", put.ReplaySafe, put.Replayable())
	}
	if a, b := spec.Instance("a"), spec.Instance("b"); a == nil || b == nil || a.Client != keyspec.ClientGoRedis || b.Client != keyspec.ClientRueidis {
		t.Errorf("clients: a %+v, b %+v; want go-redis (the default) and rueidis", a, b)
	}
	if got := spec.Key("t_item").Pattern.Glob(); got != "t:item:*:*" {
		t.Errorf("glob = %q", got)
	}
}

// The real spec: everything DESIGN.md's key map lists is declared, resolved and
// owned by the right user.
func TestHANSpec(t *testing.T) {
	spec, err := keyspec.Load("../../keyspec.yaml")
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

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]string{"30d": "720h0m0s", "90s": "1m30s", "1ms": "1ms"} {
		d, err := keyspec.ParseDuration(in)
		if err != nil || d.String() != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %s", in, d, err, want)
		}
	}
	for _, bad := range []string{"", "1x", "d", "1.5d"} {
		if _, err := keyspec.ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

// The run-time hook: what the spec expects of a key a script left behind.
func TestExpectation(t *testing.T) {
	spec, err := keyspec.Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := spec.Instance("a")
	k := spec.KeyOf(a, "t:item:00000000-0000-0000-0000-000000000000:red")
	if k == nil || k.Name != "t_item" {
		t.Fatalf("KeyOf = %v, want t_item", k)
	}
	if e := k.Expectation(); !e.Expires || e.MaxTTL.String() != "1h0m0s" || e.MaxLen != 0 {
		t.Errorf("Expectation = %+v", e)
	}
	if spec.KeyOf(a, "t:item:x:red") != nil || spec.KeyOf(a, "w:item:3") != nil {
		t.Error("KeyOf matched a name of no key of a")
	}
	if e := spec.Key("w_item").Expectation(); !e.Expires || e.MaxTTL.String() != "720h0m0s" {
		t.Errorf("clamped Expectation = %+v", e)
	}
}
