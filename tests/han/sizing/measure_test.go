package sizing_test

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/sizing"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/specedit"
)

func measure(t *testing.T, spec *keyspec.Spec, src string) (*sizing.Report, error) {
	t.Helper()
	redistest.Need(t) // a scratch redis-server
	srcs, err := compiler.Load(spec, os.DirFS("../../../lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	f, err := sizing.Parse("sizing/test.yaml", []byte(src), spec)
	if err != nil {
		t.Fatal(err)
	}
	return sizing.Measure(context.Background(), spec, srcs, f, sizing.Options{})
}

func entry(t *testing.T, r *sizing.Report, key string) sizing.EntryReport {
	t.Helper()
	for _, e := range r.Entries {
		if e.Key == key {
			return e
		}
	}
	t.Fatalf("no entry %s", key)
	return sizing.EntryReport{}
}

// A sizing run on a scratch redis-server sees encodings change: a ZSET of 200
// members is a skiplist where one of 100 is a listpack, a hash with a value
// above 64 bytes a hashtable; each costs what MEMORY USAGE says plus the
// keyspace's share; the totals follow the seeds' formula.
func TestSizingOnAScratchServer(t *testing.T) {
	spec := hanSpec(t)
	r, err := measure(t, spec, `version: 1
instance: vm1
samples: 20
shard_maxmemory: 64mb
fixed:
  - {name: buffers, bytes: 1mb, source: test}
keys:
  api_rl_user:
    count: 100000
    calls: 100
    params: {route_hash: messages.send, window: "60"}
    steps:
      - script: rate_limit_sliding
        args: {limit: 10000, window: 60s, jitter: 0s, cost: 1, peek: false}
  api_rl_ip:
    count: 100000
    calls: 200
    params: {route_hash: messages.send, window: "60"}
    steps:
      - script: rate_limit_sliding
        args: {limit: 10000, window: 60s, jitter: 0s, cost: 1, peek: false}
`)
	if err != nil {
		t.Fatal(err)
	}
	small, big := entry(t, r, "api_rl_user"), entry(t, r, "api_rl_ip")
	if small.Encoding != "listpack" || big.Encoding != "skiplist" {
		t.Fatalf("encodings %s and %s, want listpack (100 members) and skiplist (200)", small.Encoding, big.Encoding)
	}
	if perSmall, perBig := small.UsageBytes/100, big.UsageBytes/200; perBig < 2*perSmall {
		t.Errorf("a skiplist member costs %.0f bytes, a listpack one %.0f: the encoding change is not measured", perBig, perSmall)
	}
	if small.Sampled != 20 || !small.Expires || small.LiveKeys != 100000 {
		t.Errorf("sampled %d, expires %v, live %d", small.Sampled, small.Expires, small.LiveKeys)
	}
	// 200,000 keys with a TTL in db 0: tables of 262,144 buckets.
	wantOverhead := float64(r.EntryAllocBytes-24) + 8*262144/200000.0 + float64(r.EntryAllocBytes) + 8*262144/200000.0
	if math.Abs(small.OverheadBytes-wantOverhead) > 0.01 {
		t.Errorf("overhead %.2f, want %.2f", small.OverheadBytes, wantOverhead)
	}
	if big.OverheadBytes <= small.OverheadBytes && r.EntryAllocBytes == 32 {
		t.Errorf("a skiplist's dictionary entries are rounded up too: %.1f <= %.1f", big.OverheadBytes, small.OverheadBytes)
	}
	s := r.Servers[0]
	data := float64(r.BaselineBytes) + small.Bytes + big.Bytes + 1<<20
	if math.Abs(s.DataBytes-data) > 1 || math.Abs(s.SeedEstimateBytes-data*1.5*1.3) > 1 {
		t.Errorf("data %.0f (want %.0f), seeds' estimate %.0f", s.DataBytes, data, s.SeedEstimateBytes)
	}
	if want := int64(math.Ceil(data*1.3/(1<<20))) << 20; s.MaxmemoryBytes != want {
		t.Errorf("maxmemory %d, want %d", s.MaxmemoryBytes, want)
	}
	if want := int(math.Ceil(float64(s.MaxmemoryBytes) / (64 << 20))); s.Shards != want || s.Shards < 2 {
		t.Errorf("%d shards, want %d (more than one: the test sizes more than 64mb)", s.Shards, want)
	}
	var text strings.Builder
	if err := r.Text(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"api_rl_ip", "skiplist", "seeds' estimate", "maxmemory", "cluster shards"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}

	// VM2's cache entries: a value above 64 bytes makes the hash a hashtable.
	r, err = measure(t, spec, `version: 1
instance: vm2
samples: 10
shard_maxmemory: 4gb
keys:
  safety_link:
    count: 1000
    steps:
      - script: cache_set
        args: {value: {size: 32}, stamp: 1, ttl: 1h, max_ttl: 48h}
  safety_text:
    count: 1000
    steps:
      - script: cache_set
        args: {value: {size: 256}, stamp: 1, ttl: 1h, max_ttl: 48h}
`)
	if err != nil {
		t.Fatal(err)
	}
	if l, x := entry(t, r, "safety_link"), entry(t, r, "safety_text"); l.Encoding != "listpack" || x.Encoding != "hashtable" {
		t.Errorf("encodings %s and %s, want listpack (32-byte value) and hashtable (256)", l.Encoding, x.Encoding)
	}
}

// A script that refuses the file's arguments stops the run with the file's
// line and the script's reply.
func TestSizingReportsAScriptError(t *testing.T) {
	spec := hanSpec(t)
	_, err := measure(t, spec, `version: 1
instance: vm1
samples: 2
shard_maxmemory: 4gb
keys:
  api_rl_user:
    count: 10
    params: {route_hash: messages.send, window: "60"}
    steps:
      - script: rate_limit_sliding
        args: {limit: 5, window: 60s, jitter: 0s, cost: 6, peek: false}
`)
	if err == nil || !strings.Contains(err.Error(), "sizing/test.yaml:10: key \"api_rl_user\": step rate_limit_sliding answered: BAD_ARG") {
		t.Fatalf("a refused call: %v", err)
	}
}

// On an instance split over servers (HAN's R6 edit), each server gets its own
// totals: its patterns, its own empty server, its maxmemory and shards.
func TestSizingPerServer(t *testing.T) {
	src, err := os.ReadFile("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	split, err := specedit.MoveDB(src, specedit.HANRealtime)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := keyspec.Parse("keyspec.yaml", split)
	if err != nil {
		t.Fatal(err)
	}
	r, err := measure(t, spec, `version: 1
instance: vm1
samples: 10
shard_maxmemory: 4gb
fixed:
  - {name: buffers, bytes: 2mb, source: test}
keys:
  api_jwks_negative:
    count: 1000
    steps: [{script: jwks_negative_mark}]
  rt_conn:
    count: 3000
    steps:
      - script: rt_heartbeat
        args: {instance: gateway-1, subscriptions: 3}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 2 || r.Servers[0].Name != "" || r.Servers[1].Name != "realtime" {
		t.Fatalf("servers %+v", r.Servers)
	}
	own, rt := r.Servers[0], r.Servers[1]
	jwks, conn := entry(t, r, "api_jwks_negative"), entry(t, r, "rt_conn")
	if jwks.Server != "" || conn.Server != "realtime" || own.LiveKeys != 1000 || rt.LiveKeys != 3000 {
		t.Fatalf("placement: %+v %+v, live %d and %d", jwks, conn, own.LiveKeys, rt.LiveKeys)
	}
	if want := float64(r.BaselineBytes) + jwks.Bytes + 2<<20; math.Abs(own.DataBytes-want) > 1 {
		t.Errorf("own server: %.0f, want %.0f (the fixed memory is its own)", own.DataBytes, want)
	}
	if want := float64(r.BaselineBytes) + conn.Bytes; math.Abs(rt.DataBytes-want) > 1 {
		t.Errorf("realtime: %.0f, want %.0f", rt.DataBytes, want)
	}
	var text strings.Builder
	if err := r.Text(&text); err != nil || !strings.Contains(text.String(), "server realtime:") || !strings.Contains(text.String(), "rt_conn [realtime]") {
		t.Errorf("text report: %v\n%s", err, text.String())
	}
}

// With rates, a sizing run measures each branch's CPU per call on the scratch
// server (a completion meets a reservation of its own, made by the entry's
// steps with the same owner token) and derives the capacities from it: the
// weighted cost, the calls one shard serves at the ceiling, the threads the
// declared rates take; a rate above one shard's ceiling needs more shards
// than memory does.
func TestThroughputOnAScratchServer(t *testing.T) {
	spec := hanSpec(t)
	redistest.Need(t)
	srcs, err := compiler.Load(spec, os.DirFS("../../../lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	f, err := sizing.Parse("sizing/test.yaml", []byte(`version: 1
instance: vm1
samples: 5
shard_maxmemory: 4gb
utilisation: 50%
keys:
  api_rl_user:
    count: 1000
    calls: 20
    params: {route_hash: messages.send, window: "60"}
    steps:
      - script: rate_limit_sliding
        args: {limit: 100, window: 60s, jitter: 0s, cost: 1, peek: false}
  api_idem_lock:
    count: 100
    steps: [{script: idem_reserve}]
  api_idem:
    count: 100
    steps: [{script: idem_reserve}]
rates:
  rate_limit_sliding:
    rate: 1000000/s
    branches:
      - {name: allowed, share: 50%}
      - {name: denied, share: 50%, args: {limit: 5}}
  idem_complete:
    rate: 100/s
    key: api_idem_lock
    args: {status: 201, response: {size: 100}, resource_id: r-1}
`), spec)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sizing.Measure(context.Background(), spec, srcs, f, sizing.Options{RateCalls: 300})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rates) != 2 || r.Utilisation != 0.5 || r.RateCalls != 300 {
		t.Fatalf("rates %+v", r.Rates)
	}
	complete, sliding := r.Rates[0], r.Rates[1]
	if complete.Script != "idem_complete" || complete.CPUUsecPerCall <= 0 || complete.UsecPerCall <= 0 {
		t.Errorf("idem_complete (each call completes a reservation of its own, so no NOT_OWNER): %+v", complete)
	}
	allowed, denied := sliding.Branches[0], sliding.Branches[1]
	if allowed.Calls != 300 || denied.Calls != 300 || allowed.CPUUsecPerCall <= 0 || denied.CPUUsecPerCall <= 0 {
		t.Fatalf("branches %+v", sliding.Branches)
	}
	want := 0.5*allowed.CPUUsecPerCall + 0.5*denied.CPUUsecPerCall
	if math.Abs(sliding.CPUUsecPerCall-want) > 1e-9 || math.Abs(sliding.SaturationCallsPerSecond-1e6/want) > 1e-6 ||
		math.Abs(sliding.ShardCallsPerSecond-0.5e6/want) > 1e-6 || math.Abs(sliding.Threads-want) > 1e-9 {
		t.Errorf("derived %+v from %.2f µs a call", sliding, want)
	}
	s := r.Servers[0]
	if wantShards := int(math.Ceil((sliding.Threads + complete.Threads) / 0.5)); s.ShardsForRates != wantShards || s.ShardsForRates < 2 ||
		s.ShardsNeeded != max(s.Shards, s.ShardsForRates) {
		t.Errorf("shards: memory %d, rates %d (want %d), needed %d", s.Shards, s.ShardsForRates, wantShards, s.ShardsNeeded)
	}
	var text strings.Builder
	if err := r.Text(&text); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"CPU µs/call", "calls/s at 50%", "allowed 50%", "shards for the rates", "shards needed"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("the text report lacks %q:\n%s", w, text.String())
		}
	}

	// A measured call that fails stops the run with the rate's line: a
	// completion on keys nobody reserved is NOT_OWNER.
	f, err = sizing.Parse("sizing/test.yaml", []byte(`version: 1
instance: vm1
samples: 2
shard_maxmemory: 4gb
keys:
  api_idem_lock:
    count: 1
    steps: [{script: idem_reserve}]
rates:
  idem_complete:
    rate: 100/s
    args: {status: 201, response: x, resource_id: r-1}
    branches:
      - {name: nobody, share: 100%, fresh: true}
`), spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sizing.Measure(context.Background(), spec, srcs, f, sizing.Options{RateCalls: 10})
	if err == nil || !strings.Contains(err.Error(), `sizing/test.yaml:14: rate "idem_complete" branch "nobody"`) || !strings.Contains(err.Error(), "NOT_OWNER") {
		t.Fatalf("a failing call: %v", err)
	}
}
