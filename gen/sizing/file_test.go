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
	spec, err := keyspec.Load("../../keyspec.yaml")
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

// HAN's sample files parse and account for every live key of their instance.
func TestHANFilesAreComplete(t *testing.T) {
	spec := hanSpec(t)
	for _, in := range []string{"vm1", "vm2"} {
		f, err := sizing.Load("../../sizing/"+in+".yaml", spec)
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

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "1k": 1000, "1kb": 1024, "4gb": 4 << 30, "2m": 2e6, "16MB": 16 << 20, "7b": 7} {
		if got, err := sizing.ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "gb", "-1", "1tb", "1.5gb", "99999999999gb"} {
		if _, err := sizing.ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
	if math.MaxInt64 < 0 {
		t.Fatal("unreachable")
	}
}
