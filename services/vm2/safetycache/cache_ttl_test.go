package safetycache_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/vm2/safetycache"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
)

func hexDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// On real Redis, each hot-cache entry gets exactly the TTL it should, to the
// millisecond of the server's clock (seed 004 §3): a configured TTL above the
// key's cap is clamped to text 48 h, verdict 30 d, link 48 h; a DNS answer keeps
// its own TTL up to 900 s; a TTL below the cap is kept as configured.
func TestCacheTTLCapsOnRedis(t *testing.T) {
	seedCaps := map[string][2]time.Duration{
		"text":    {vm2.SafetyTextMaxTTL, 48 * time.Hour},
		"verdict": {vm2.SafetyVerdictMaxTTL, 30 * 24 * time.Hour},
		"link":    {vm2.SafetyLinkMaxTTL, 48 * time.Hour},
		"dns":     {vm2.SafetyDNSMaxTTL, 900 * time.Second},
	}
	for kind, c := range seedCaps {
		if c[0] != c[1] {
			t.Fatalf("keyspec.yaml caps %s entries at %s, the seed at %s", kind, c[0], c[1])
		}
	}
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(0)
	c, err := safetyredis.New(rdb, safetyredis.Options{CacheTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	over := safetycache.Policy{Generation: 1, TextTTL: 72 * time.Hour, VerdictTTL: 45 * 24 * time.Hour, LinkTTL: 100 * time.Hour, DNSMaxTTL: time.Hour}
	under := safetycache.Policy{Generation: 1, TextTTL: 90 * time.Minute, VerdictTTL: 36 * time.Hour, LinkTTL: 2*time.Hour + 7*time.Millisecond, DNSMaxTTL: 5 * time.Minute}
	for _, tc := range []struct {
		name   string
		policy safetycache.Policy
		dnsTTL time.Duration // the DNS answer's own TTL
		want   map[safetyrecord.Kind]time.Duration
		capped bool
	}{
		{"above the caps", over, 3600 * time.Second, map[safetyrecord.Kind]time.Duration{
			safetyrecord.KindText: 48 * time.Hour, safetyrecord.KindVerdict: 30 * 24 * time.Hour, safetyrecord.KindLink: 48 * time.Hour, safetyrecord.KindDNS: 900 * time.Second}, true},
		{"below the caps", under, 250 * time.Second, map[safetyrecord.Kind]time.Duration{
			safetyrecord.KindText: 90 * time.Minute, safetyrecord.KindVerdict: 36 * time.Hour, safetyrecord.KindLink: 2*time.Hour + 7*time.Millisecond, safetyrecord.KindDNS: 250 * time.Second}, false},
		{"DNS under the policy's own maximum", under, 600 * time.Second, map[safetyrecord.Kind]time.Duration{
			safetyrecord.KindDNS: 5 * time.Minute}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache, err := safetycache.New(c, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			id := tc.name
			check := func(kind safetyrecord.Kind, key string, set func() (safetycache.SetResult, error)) {
				want, ok := tc.want[kind]
				if !ok {
					return
				}
				redistest.ExpectTTL(t, rdb, key, want, func() {
					r, err := set()
					if err != nil || r.Outcome != safetycache.SetWritten || r.TTL != want || r.Capped != tc.capped {
						t.Errorf("%s: %+v %v, want written with TTL %s (capped %v)", kind, r, err, want, tc.capped)
					}
				})
			}
			text, _ := vm2.NewSafetyTextKey(hexDigest("text "+id), "rules-1")
			check(safetyrecord.KindText, text.String(), func() (safetycache.SetResult, error) {
				return cache.SetText(ctx, text, safetyrecord.TextResult{Verdict: safetyrecord.VerdictAllow})
			})
			verdict, _ := vm2.NewSafetyVerdictKey(hexDigest("file "+id), "config-1", "bundle-1")
			check(safetyrecord.KindVerdict, verdict.String(), func() (safetycache.SetResult, error) {
				return cache.SetVerdict(ctx, verdict, safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictBlock, RuleIDs: []string{"sig-9"}})
			})
			link, _ := vm2.NewSafetyLinkKey(hexDigest("link "+id), "rules-1", "config-1")
			check(safetyrecord.KindLink, link.String(), func() (safetycache.SetResult, error) {
				return cache.SetLink(ctx, link, safetyrecord.LinkPolicy{Class: safetyrecord.LinkUnknown, Verdict: safetyrecord.VerdictAllow})
			})
			dns, _ := vm2.NewSafetyDNSKey(hexDigest("host "+id), vm2.DNSRRTypeA)
			check(safetyrecord.KindDNS, dns.String(), func() (safetycache.SetResult, error) {
				return cache.SetDNS(ctx, dns, safetyrecord.DNSAnswer{RRType: vm2.DNSRRTypeA, TTL: tc.dnsTTL, Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}})
			})
		})
	}
}
