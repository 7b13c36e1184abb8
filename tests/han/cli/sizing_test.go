package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanchat/luagen/internal/redistest"
)

// luagen sizing on HAN's VM2 file (the default beside the spec): a report in
// text and in JSON, exit 0; bad command lines exit 2; a bad or incomplete file,
// or no redis-server, exit 1 and say where.
func TestSizingCommand(t *testing.T) {
	redistest.Need(t) // scratch redis-servers
	base := []string{"sizing", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua"}
	code, stdout, stderr := luagen(t, "", append(base, "--instance", "vm2")...)
	if code != 0 || !strings.Contains(stdout, "safety_verdict") || !strings.Contains(stdout, "seeds' estimate") || !strings.Contains(stdout, "cluster shards") ||
		!strings.Contains(stdout, "CPU µs/call") || !strings.Contains(stdout, "shards needed") {
		t.Fatalf("sizing vm2: %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = luagen(t, "", append(base, "--instance", "vm2", "--format", "json")...)
	var report struct {
		Instance string `json:"instance"`
		Keys     []struct {
			Key         string  `json:"key"`
			BytesPerKey float64 `json:"bytes_per_key"`
			LiveKeys    int64   `json:"live_keys"`
		} `json:"keys"`
		Rates []struct {
			Script                   string  `json:"script"`
			CPUUsecPerCall           float64 `json:"cpu_usec_per_call"`
			SaturationCallsPerSecond float64 `json:"saturation_calls_per_second"`
			ShardCallsPerSecond      float64 `json:"shard_calls_per_second"`
		} `json:"rates"`
		Servers []struct {
			MaxmemoryBytes int64 `json:"maxmemory_bytes"`
			Shards         int   `json:"shards"`
			ShardsForRates int   `json:"shards_for_rates"`
			ShardsNeeded   int   `json:"shards_needed"`
		} `json:"servers"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &report) != nil || report.Instance != "vm2" || len(report.Keys) != 5 ||
		len(report.Servers) != 1 || report.Servers[0].MaxmemoryBytes <= 0 || report.Servers[0].Shards < 1 {
		t.Fatalf("sizing --format json: %d\n%s\n%s", code, stdout, stderr)
	}
	for _, k := range report.Keys {
		if k.BytesPerKey <= 0 {
			t.Errorf("%s: %.0f bytes a key", k.Key, k.BytesPerKey)
		}
	}
	// sizing/vm2.yaml's rates: cache_get, cache_set, safety_rate_limit.
	if len(report.Rates) != 3 || report.Servers[0].ShardsForRates < 1 || report.Servers[0].ShardsNeeded < report.Servers[0].Shards {
		t.Fatalf("rates: %+v, servers %+v", report.Rates, report.Servers)
	}
	for _, r := range report.Rates {
		if r.CPUUsecPerCall <= 0 || r.ShardCallsPerSecond <= 0 || r.ShardCallsPerSecond >= r.SaturationCallsPerSecond {
			t.Errorf("%s: %+v", r.Script, r)
		}
	}

	for _, args := range [][]string{base, append(base, "--instance", "vm2", "--format", "xml"), append(base, "--instance", "vm2", "stray")} {
		if code, _, _ := luagen(t, "", args...); code != 2 {
			t.Errorf("%v exited %d, want 2", args, code)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\ninstance: vm2\nshard_maxmemory: 4gb\nkeys:\n  safety_dns:\n    cnt: 3\n"), 0o644)
	if code, _, stderr := luagen(t, "", append(base, "--instance", "vm2", "--file", bad)...); code != 1 || !strings.Contains(stderr, "bad.yaml:6: field cnt not found") {
		t.Errorf("a bad file: %d %s", code, stderr)
	}
	partial := filepath.Join(dir, "partial.yaml")
	os.WriteFile(partial, []byte("version: 1\ninstance: vm2\nshard_maxmemory: 4gb\nkeys:\n  safety_dns:\n    count: 3\n    steps: [{script: cache_set, args: {value: x, stamp: 1, ttl: 1s, max_ttl: 1s}}]\n"), 0o644)
	if code, _, stderr := luagen(t, "", append(base, "--instance", "vm2", "--file", partial)...); code != 1 || !strings.Contains(stderr, `partial.yaml:4: key "safety_link": a key of vm2`) {
		t.Errorf("an incomplete file: %d %s", code, stderr)
	}
	if code, _, stderr := luagen(t, "", append(base, "--instance", "vm1", "--file", partial)...); code != 1 || !strings.Contains(stderr, "sizes instance vm2, not vm1") {
		t.Errorf("another instance's file: %d %s", code, stderr)
	}
	if code, _, stderr := luagen(t, "", append(base, "--instance", "vm2", "--redis-server", filepath.Join(dir, "no-such-redis-server"))...); code != 1 || !strings.Contains(stderr, "scratch redis-server") {
		t.Errorf("no redis-server: %d %s", code, stderr)
	}
}
