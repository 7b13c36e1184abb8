package tests

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/vm2/callerlimit"
	"github.com/hanchat/luagen/services/vm2/safetycache"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/hanchat/luagen/services/vm2/waker"
	"github.com/prometheus/client_golang/prometheus"
)

// forbiddenKinds are the key kinds seed 004 §1, §3, §4 keep out of VM2's Redis:
// PostgreSQL alone holds safety tasks and their leases.
var forbiddenKinds = map[string]bool{"task": true, "lease": true, "lock": true, "task_poll": true}

// A full Message Safety workload, run as ACL user message_safety under the generated
// aclfile and hardened config, then a scan of the whole keyspace: every key is a
// declared vm2 key with a TTL, none is task, lease or lock state or a VM1 key, every
// value is a valid typed record, and no key or value holds any of the raw message
// texts, file bytes, URLs or host names the workload handled.
func TestSafetyWorkloadLeavesNoTaskStateAndEveryKeyHasTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, k := range vm2.Keys {
		if forbiddenKinds[k.Kind] {
			t.Fatalf("vm2 declares %s of kind %s", k.Name, k.Kind)
		}
	}
	a := startACLInstance(t, "vm2")
	c, reg := safetytest.New(t, a.client(t, "message_safety", vm2.DB0), safetyredis.Options{CacheTimeout: 5 * time.Second, RateLimitTimeout: 5 * time.Second, PublishTimeout: 5 * time.Second})
	if h := c.Health(ctx); h.Status != safetyredis.HealthOK {
		t.Fatalf("health as message_safety: %+v", h)
	}
	older, newer := safetytest.Policy, safetytest.Policy
	older.Generation, newer.Generation = 4, 5
	caches := []*safetycache.Cache{safetytest.NewCache(t, c, older), safetytest.NewCache(t, c, newer)}

	texts := []string{
		"Привет, Анна! Мой телефон +7 999 123-45-67, перезвони до пятницы",
		"the contract draft is attached; wire 12,000 EUR to DE89 3704 0044 0532 0130 00",
		"ok",
	}
	files := [][]byte{[]byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3 confidential board minutes"), {0x50, 0x4b, 0x03, 0x04, 'd', 'o', 'c', 'x', 0, 0, 7}}
	urls := []string{
		"https://han-files.s3.eu-central-1.amazonaws.com/u/42/scan.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature=9f86d081884c7d65",
		"https://example.org/landing?utm_source=chat",
	}
	hosts := []string{"phish.example", "cdn.example.net"}
	// What may appear in no value: the texts, files and URLs. Host names may appear
	// in DNS answers (an MX or CNAME target), but in no key.
	var raw [][]byte
	for _, s := range append(texts[:2:2], urls...) {
		raw = append(raw, []byte(s))
	}
	raw = append(raw, files...)
	inKeys := append(slices.Clone(raw), []byte(hosts[0]), []byte(hosts[1]))

	want := map[string]bool{}
	for gi, k := range caches {
		g := strconv.Itoa(gi)
		for i, text := range texts {
			key, err := vm2.NewSafetyTextKey(safetytest.Digest(text), "rules-7")
			if err != nil {
				t.Fatal(err)
			}
			want[key.String()] = true
			if _, err := k.SetText(ctx, key, safetyrecord.TextResult{Verdict: safetyrecord.VerdictMonitor, MonitorRuleIDs: []string{"pii.phone", "g" + g}}); err != nil {
				t.Fatal(err)
			}
			// The raw text itself has nowhere to go.
			if i < 2 {
				if _, err := k.SetText(ctx, key, safetyrecord.TextResult{Verdict: safetyrecord.VerdictAllow, RuleIDs: []string{text}}); !errors.Is(err, safetyrecord.ErrInvalidRecord) {
					t.Fatalf("raw text stored as a rule id: %v", err)
				}
			}
		}
		for _, f := range files {
			key, _ := vm2.NewSafetyVerdictKey(safetytest.Digest(string(f)), "cfg-2", "clamav-1.4")
			want[key.String()] = true
			if _, err := k.SetVerdict(ctx, key, safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictAllow}); err != nil {
				t.Fatal(err)
			}
		}
		for _, u := range urls {
			key, _ := vm2.NewSafetyLinkKey(safetytest.Digest(u), "rules-7", "cfg-2")
			want[key.String()] = true
			if _, err := k.SetLink(ctx, key, safetyrecord.LinkPolicy{Class: safetyrecord.LinkUnknown, Verdict: safetyrecord.VerdictAllow, RuleIDs: []string{u}}); !errors.Is(err, safetyrecord.ErrInvalidRecord) {
				t.Fatalf("a URL stored as a rule id: %v", err)
			}
			if _, err := k.SetLink(ctx, key, safetyrecord.LinkPolicy{Class: safetyrecord.LinkSuspicious, Verdict: safetyrecord.VerdictReview, RuleIDs: []string{"link.tracking"}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, host := range hosts {
			for _, ans := range []safetyrecord.DNSAnswer{
				{RRType: vm2.DNSRRTypeA, TTL: time.Hour, Addrs: []netip.Addr{netip.MustParseAddr("203.0.113.9")}},
				{RRType: vm2.DNSRRTypeAAAA, TTL: 30 * time.Second},
				{RRType: vm2.DNSRRTypeMX, TTL: time.Minute, MX: []safetyrecord.MX{{Preference: 5, Host: "mx." + host}}},
				{RRType: vm2.DNSRRTypeTXT, TTL: time.Minute, TXT: []string{"v=spf1 -all"}},
			} {
				key, _ := vm2.NewSafetyDNSKey(safetytest.Digest(host), ans.RRType)
				want[key.String()] = true
				if _, err := k.SetDNS(ctx, key, ans); err != nil {
					t.Fatal(err)
				}
			}
			key, _ := vm2.NewSafetyDNSKey(safetytest.Digest(host), vm2.DNSRRTypeTXT)
			if _, err := k.SetDNS(ctx, key, safetyrecord.DNSAnswer{RRType: vm2.DNSRRTypeTXT, TTL: time.Minute, TXT: []string{"go " + urls[0]}}); !errors.Is(err, safetyrecord.ErrInvalidRecord) {
				t.Fatalf("a presigned URL stored as TXT: %v", err)
			}
		}
	}
	callers := map[string]callerlimit.Policy{
		"api-backend":   {Limit: 5, Window: time.Minute, MaxJitter: 2 * time.Second},
		"file-scanner":  {Limit: 100, Window: time.Hour, Degraded: degraded.LocalLimit, LocalLimit: 10},
		"link-resolver": {Limit: 2, Window: time.Second},
	}
	l, err := callerlimit.New(c, callers)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range callers {
		key, _ := vm2.NewSafetyRLServiceKey(name, int64(p.Window/time.Second))
		want[key.String()] = true
		for i := 0; i < 7; i++ {
			if _, err := l.Allow(ctx, name, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	wk, err := waker.New(c)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := wk.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	safetytest.WaitWakeup(t, sub, safetyrecord.WakeSubscribed, 5*time.Second)
	if res, err := wk.Publish(ctx, safetyrecord.Wakeup{Reason: safetyrecord.WakeTasksReady}); err != nil || !res.Sent || res.Receivers != 1 {
		t.Fatalf("publish as message_safety: %+v %v", res, err)
	}
	safetytest.WaitWakeup(t, sub, safetyrecord.WakeTasksReady, 5*time.Second)
	if c.Degraded() {
		t.Fatal("the workload ran degraded")
	}

	// The scan, as an administrator.
	scripttest.AuditTTLs(t, a.admin, vm2.Keys)
	var found []string
	iter := a.admin.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		found = append(found, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	var wantKeys []string
	for k := range want {
		wantKeys = append(wantKeys, k)
	}
	sort.Strings(found)
	sort.Strings(wantKeys)
	if diff := cmp.Diff(wantKeys, found); diff != "" {
		t.Fatalf("keyspace (-want +found):\n%s", diff)
	}
	for _, key := range found {
		for _, info := range vm2.Keys {
			if info.Matches(key) && forbiddenKinds[info.Kind] {
				t.Errorf("%s is %s state", key, info.Kind)
			}
		}
		for _, info := range vm1.Keys {
			if info.Matches(key) {
				t.Errorf("%s is VM1's %s", key, info.Name)
			}
		}
		var values [][]byte
		switch typ := a.admin.Type(ctx, key).Val(); typ {
		case "hash":
			h := a.admin.HGetAll(ctx, key).Val()
			if len(h) != 2 || h["stamp"] != "5" {
				t.Errorf("%s: fields %v, want stamp 5 and value", key, mapKeysOf(h))
			}
			v := []byte(h["value"])
			values = append(values, v)
			var derr error
			switch {
			case strings.HasPrefix(key, "han:safety:text:"):
				_, derr = safetyrecord.DecodeText(v)
			case strings.HasPrefix(key, "han:safety:verdict:"):
				_, derr = safetyrecord.DecodeVerdict(v)
			case strings.HasPrefix(key, "han:safety:link:"):
				_, derr = safetyrecord.DecodeLink(v)
			case strings.HasPrefix(key, "han:safety:dns:"):
				_, derr = safetyrecord.DecodeDNS(v)
			default:
				t.Errorf("%s: a hash outside the caches", key)
			}
			if derr != nil {
				t.Errorf("%s: %v", key, derr)
			}
		case "string":
			n, err := a.admin.Get(ctx, key).Int64()
			if err != nil || !strings.HasPrefix(key, "han:safety:rl:service:") || n < 1 {
				t.Errorf("%s: a string %d (%v) outside the rate counters", key, n, err)
			}
		default:
			t.Errorf("%s: type %s", key, typ)
		}
		for _, v := range values {
			for _, r := range raw {
				if bytes.Contains(v, r) {
					t.Errorf("%s holds a raw input", key)
				}
			}
		}
		for _, r := range inKeys {
			if strings.Contains(key, string(r)) {
				t.Errorf("%s names a raw input", key)
			}
		}
	}
	if got := promtest.Sum(t, reg, "han_safety_cache_writes_total", map[string]string{"result": "written"}); got != float64(2*(len(texts)+len(files)+len(urls)+4*len(hosts))) {
		t.Errorf("written entries counted %v", got)
	}
	assertLabelHygiene(t, reg, mapKeysOf(callers), append(inKeys, []byte(safetytest.Digest(texts[0]))[:16]))
}

func mapKeysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// assertLabelHygiene fails for any metric label value outside the fixed sets and the
// configured callers, or holding any of the forbidden inputs or a long hex run: no
// hash, value, text or secret is ever a label.
func assertLabelHygiene(t *testing.T, reg prometheus.Gatherer, callers []string, forbidden [][]byte) {
	t.Helper()
	allowed := map[string][]string{
		"kind":     {"text", "verdict", "link", "dns"},
		"result":   {"hit", "miss", "stale", "unavailable", "corrupt", "error", "written", "dropped", "skipped", "sent", "delivered", "coalesced", "invalid", "subscribed"},
		"decision": {"allowed", "denied"},
		"source":   {"redis", "local", "closed"},
		"caller":   callers,
	}
	hexRun := regexp.MustCompile(`[0-9a-f]{16,}`)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "han_safety_") {
			t.Errorf("metric %s outside han_safety_", f.GetName())
		}
		for _, m := range f.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if !slices.Contains(allowed[l.GetName()], l.GetValue()) {
					t.Errorf("%s: label %s=%q outside its set", f.GetName(), l.GetName(), l.GetValue())
				}
				if hexRun.MatchString(l.GetValue()) {
					t.Errorf("%s: label %s holds a hash", f.GetName(), l.GetName())
				}
				for _, r := range forbidden {
					if bytes.Contains([]byte(l.GetValue()), r) {
						t.Errorf("%s: label %s holds an input", f.GetName(), l.GetName())
					}
				}
			}
		}
	}
	if series < 50 {
		t.Fatalf("only %d series checked", series)
	}
}
