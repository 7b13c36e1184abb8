package keyspec_test

import (
	"os"
	"strings"
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

// A list declared with of keeps its element type (and an enum element's enum),
// as the whole reply, as a field, and inside a list element.
func TestListOfParses(t *testing.T) {
	base, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(base), "    reply: {type: bool, name: stored}\n", `    reply:
      fields:
        - {name: counts, type: list, of: int}
        - {name: colors, type: list, of: enum, enum: color}
        - name: groups
          type: list
          fields:
            - {name: ids, type: list, of: strings}
`, 1)
	spec, err := keyspec.Parse("keyspec.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	f := spec.Script("put").Reply.Fields
	if len(f) != 3 || f[0].Of != keyspec.ReplyInt || f[1].Of != keyspec.ReplyEnum || f[1].Enum == nil || f[1].Enum.Name != "color" {
		t.Fatalf("fields: %+v", f)
	}
	if e := f[2].Fields; len(e) != 1 || e[0].Type != keyspec.ReplyList || e[0].Of != keyspec.ReplyStrings || len(e[0].Fields) != 0 {
		t.Errorf("list element fields: %+v", e)
	}
	whole := strings.Replace(string(base), "    reply: {type: bool, name: stored}\n", "    reply: {type: list, name: counts, of: duration_ms}\n", 1)
	if spec, err = keyspec.Parse("keyspec.yaml", []byte(whole)); err != nil {
		t.Fatal(err)
	}
	if v := spec.Script("put").Reply.Value; v == nil || v.Type != keyspec.ReplyList || v.Of != keyspec.ReplyDurationMS {
		t.Errorf("whole reply: %+v", v)
	}
}
