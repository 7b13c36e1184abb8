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
