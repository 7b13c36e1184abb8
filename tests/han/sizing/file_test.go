package sizing_test

import (
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/sizing"
)

var update = flag.Bool("update", false, "rewrite the want lines of testdata/invalid")

func hanSpec(t *testing.T) *keyspec.Spec {
	t.Helper()
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// Each testdata/invalid fixture has one mistake; its first line, "# want:
// ...", is the exact first error, naming the file and line.
func TestInvalidFilesNameFileAndLine(t *testing.T) {
	spec := hanSpec(t)
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, rest, _ := strings.Cut(string(src), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatal("first line must be # want: <error>")
			}
			_, err = sizing.Parse("sizing/vm1.yaml", src, spec)
			if err == nil {
				t.Fatal("parsed without error")
			}
			if !errors.Is(err, sizing.ErrInvalid) {
				t.Errorf("error does not match ErrInvalid: %v", err)
			}
			got, _, _ := strings.Cut(err.Error(), "\n")
			if *update {
				if err := os.WriteFile(f, []byte("# want: "+got+"\n"+rest), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("first error:\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// HAN's and Elang's sample files parse and account for every live key of
// their instance.
func TestHANFilesAreComplete(t *testing.T) {
	spec := hanSpec(t)
	for _, in := range []string{"vm1", "vm2", "elang"} {
		f, err := sizing.Load("../../../sizing/"+in+".yaml", spec)
		if err != nil {
			t.Fatal(err)
		}
		if f.Instance.Name != in {
			t.Errorf("%s.yaml sizes %s", in, f.Instance.Name)
		}
		if err := f.Complete(spec); err != nil {
			t.Errorf("%s.yaml: %v", in, err)
		}
	}
	src := "version: 1\ninstance: vm2\nshard_maxmemory: 4gb\nkeys:\n  safety_rl_service:\n    count: 1\n    params: {window: \"60\"}\n    steps:\n      - script: safety_rate_limit\n        args: {limit: 6, window: 60s, jitter: 0s, cost: 1, peek: false}\n"
	f, err := sizing.Parse("partial.yaml", []byte(src), spec)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Complete(spec)
	if !errors.Is(err, sizing.ErrInvalid) || !strings.Contains(err.Error(), `partial.yaml:4: key "safety_dns": a key of vm2 (keyspec.yaml:`) {
		t.Fatalf("an incomplete file: %v", err)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 4 {
		t.Errorf("%d keys reported missing, want the 4 other keys of vm2:\n%v", n, err)
	}
}

func TestLiveKeysFromRate(t *testing.T) {
	spec := hanSpec(t)
	src := `version: 1
instance: vm1
shard_maxmemory: 512mb
keys:
  api_idem:
    rate: 2000000/24h
    steps: [{script: idem_reserve}]
  api_jwks_negative:
    rate: 1/s
    lifetime: 10s
    steps: [{script: jwks_negative_mark}]
`
	f, err := sizing.Parse("x.yaml", []byte(src), spec)
	if err != nil {
		t.Fatal(err)
	}
	if f.ShardMaxmemory != 512<<20 || f.Samples != sizing.DefaultSamples || f.Fragmentation != 1.5 || f.Growth != 1.3 {
		t.Errorf("defaults: %+v", f)
	}
	idem, jwks := f.Entries[0], f.Entries[1]
	if idem.Lifetime != 24*time.Hour || idem.LiveKeys() != 2000000 {
		t.Errorf("api_idem: lifetime %s (the spec's 24h), live %d", idem.Lifetime, idem.LiveKeys())
	}
	if jwks.Lifetime != 10*time.Second || jwks.LiveKeys() != 10 {
		t.Errorf("api_jwks_negative: lifetime %s (the file's), live %d", jwks.Lifetime, jwks.LiveKeys())
	}
}

// A rates section: the utilisation's default, a rate's entry found from its
// steps or named, the entry's step arguments under the rate's and the
// branch's, one branch of all calls when none is declared.
func TestRatesParse(t *testing.T) {
	spec := hanSpec(t)
	src := `version: 1
instance: vm1
shard_maxmemory: 4gb
keys:
  api_rl_user:
    count: 10
    params: {route_hash: messages.send, window: "60"}
    steps:
      - script: rate_limit_sliding
        args: {limit: 30, window: 60s, jitter: 2s, cost: 1, peek: false}
  api_jwks_negative:
    count: 10
    steps: [{script: jwks_negative_mark}]
rates:
  rate_limit_sliding:
    rate: 6000/s
    branches:
      - {name: allowed, share: 95%}
      - {name: denied, share: 5%, args: {limit: 5}}
  jwks_negative_check:
    rate: 3/m
`
	f, err := sizing.Parse("x.yaml", []byte(src), spec)
	if err != nil {
		t.Fatal(err)
	}
	if f.Utilisation != sizing.DefaultUtilisation || len(f.Rates) != 2 {
		t.Fatalf("utilisation %v, %d rates", f.Utilisation, len(f.Rates))
	}
	jwks, sliding := f.Rates[0], f.Rates[1]
	if jwks.Script.Name != "jwks_negative_check" || jwks.Entry.Key.Name != "api_jwks_negative" || math.Abs(jwks.PerSecond-0.05) > 1e-9 ||
		len(jwks.Branches) != 1 || jwks.Branches[0].Name != "all" || jwks.Branches[0].Share != 1 {
		t.Errorf("jwks_negative_check: %+v (entry %s, branches %+v)", jwks, jwks.Entry.Key.Name, jwks.Branches)
	}
	if sliding.Entry.Key.Name != "api_rl_user" || sliding.PerSecond != 6000 || len(sliding.Branches) != 2 {
		t.Fatalf("rate_limit_sliding: %+v", sliding)
	}
	allowed, denied := sliding.Branches[0], sliding.Branches[1]
	if allowed.Share != 0.95 || denied.Share != 0.05 || allowed.Fresh || denied.Fresh {
		t.Errorf("shares %v %v", allowed.Share, denied.Share)
	}
	if got := allowed.Step.Args["limit"].Scalar; got != "30" {
		t.Errorf("allowed: limit %q, want the step's 30", got)
	}
	if got := denied.Step.Args["limit"].Scalar; got != "5" {
		t.Errorf("denied: limit %q, want the branch's 5", got)
	}
	if got := denied.Step.Args["window"].Scalar; got != "60s" {
		t.Errorf("denied: window %q, want the step's 60s", got)
	}
	// Without a rates section nothing changes: no rates, the default ceiling.
	f, err = sizing.Parse("x.yaml", []byte(strings.Split(src, "rates:")[0]), spec)
	if err != nil || len(f.Rates) != 0 || f.Utilisation != 0.7 {
		t.Fatalf("no rates: %v %+v", err, f)
	}
}

// Malformed rates sections are errors with a line, never a panic.
func TestRatesOfAnyShapeDoNotPanic(t *testing.T) {
	spec := hanSpec(t)
	head := "version: 1\ninstance: vm1\nshard_maxmemory: 4gb\nkeys:\n  api_jwks_negative: {count: 1, steps: [{script: jwks_negative_mark}]}\n"
	for _, tail := range []string{
		"rates: [1, 2]\n", "rates: {jwks_negative_check: 5}\n", "rates: {jwks_negative_check: {rate: 5}}\n",
		"rates: {jwks_negative_check: {rate: 5/s, branches: {a: 1}}}\n", "rates: {jwks_negative_check: {rate: 5/s, branches: [{name: a}]}}\n",
		"rates: {jwks_negative_check: {rate: 5/s, branches: [{name: a, share: 50%}, {name: a, share: 50%}]}}\n",
		"rates: {jwks_negative_check: {rate: 5/s, branches: [{name: a, share: -1%}, {name: b, share: 101%}]}}\n",
		"rates: {jwks_negative_check: {rate: 5/s, key: api_idem}}\n", "rates: {jwks_negative_check: {rate: 5/s, key: rt_conn}}\n",
		"rates: {jwks_negative_check: {rate: 5/s, keys: {marker: api_idem}}}\n", "rates: {jwks_negative_check: {rate: 5/s, args: {ttl: 1s}}}\n",
		"utilisation: 0%\n", "utilisation: -5%\n", "utilisation: '%'\n", "rates: {jwks_negative_check: {rate: 1e400/s}}\n",
	} {
		_, err := sizing.Parse("x.yaml", []byte(head+tail), spec)
		if err == nil || !errors.Is(err, sizing.ErrInvalid) || !strings.HasPrefix(err.Error(), "x.yaml:") {
			t.Errorf("%q: %v", tail, err)
		}
	}
}
