package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/services/vm2/safety"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// harnessVM2 runs vm2's generated wrappers on a gopher-lua harness with a fake
// clock; every run is checked for undeclared keys and missing TTLs at cleanup.
func harnessVM2(t *testing.T) (*luatest.Server, *luatest.Scripter, *vm2.Scripts) {
	t.Helper()
	h := luatest.NewServer(luatest.NewClock(t0))
	sc := h.Scripter()
	scripts, err := vm2.NewScripts(vm2.Clients{DB0: sc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sc.Check(); err != nil {
			t.Errorf("a script broke a rule: %v", err)
		}
	})
	return h, sc, scripts
}

// safetyPolicy is the active config of the tests' Message Safety.
var safetyPolicy = safety.Policy{Generation: 3, TextTTL: 6 * time.Hour, VerdictTTL: 7 * 24 * time.Hour, LinkTTL: 12 * time.Hour, DNSMaxTTL: 900 * time.Second}

// newSafety makes a safety.Client with a registry of its own on rdb.
func newSafety(t *testing.T, rdb redis.Scripter, o safety.Options) (*safety.Client, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	c, err := safety.New(rdb, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

func newSafetyCache(t *testing.T, c *safety.Client, p safety.Policy) *safety.Cache {
	t.Helper()
	k, err := safety.NewCache(c, p)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// impatient is a client that gives up on a dead server quickly and never retries, as
// Message Safety configures MESSAGE_SAFETY_REDIS_URL's client.
func impatient(o *redis.Options) {
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	o.MaxRetries = -1
}

// sha is the SHA-256 hex digest Message Safety's keys take (analysis, content, URL
// and host hashes are computed by the caller).
func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// promValue is the value of the series name{labels} in reg (0 when absent).
func promValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// promSum adds every series of name whose labels include match.
func promSum(t *testing.T, reg prometheus.Gatherer, name string, match map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m.GetLabel(), match) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func hasLabels(got []*dto.LabelPair, match map[string]string) bool {
	n := 0
	for _, l := range got {
		if v, ok := match[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(match)
}

// redisPID is the process id of the server c is connected to (INFO server).
func redisPID(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatal("INFO server has no process_id")
	return 0
}

// scriptLoads is how many SCRIPT LOAD the server has run since it started.
func scriptLoads(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_script|load:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

// startSafetyRedis starts a redis-server for vm2's db0 and returns it with a client
// of the default user.
func startSafetyRedis(t *testing.T, opts ...redistest.Option) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t, opts...)
	return srv, srv.Client(vm2.DB0)
}
