package safetycache_test

import (
	"context"
	"errors"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/services/vm2/safetycache"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/vmihailenco/msgpack/v5"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/promtest"
)

var basePolicy = safetycache.Policy{Generation: 7, TextTTL: 6 * time.Hour, VerdictTTL: 7 * 24 * time.Hour, LinkTTL: 12 * time.Hour, DNSMaxTTL: 900 * time.Second}

// Records as the service computes them.
var (
	sampleText    = safetyrecord.TextResult{Verdict: safetyrecord.VerdictMonitor, RuleIDs: []string{"pii.phone"}, MonitorRuleIDs: []string{"monitor.crypto-wallet", "m:7"}}
	sampleVerdict = safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictBlock, RuleIDs: []string{"clamav:Eicar-Signature", "yara.macro_autoexec"}}
	sampleLink    = safetyrecord.LinkPolicy{Class: safetyrecord.LinkSuspicious, Verdict: safetyrecord.VerdictReview, RuleIDs: []string{"link.shortener"}}
)

var addrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

var (
	harness  = safetytest.Harness
	newCache = safetytest.NewCache
	digest   = safetytest.Digest
	ttlOf    = safetytest.TTLOf
)

// The TTL comes from the active policy, clamped to each key's maximum in the spec,
// and each clamp is counted; the entry is gone exactly when Redis would drop it.
func TestCacheTTLFromPolicyClampedToSpecMax(t *testing.T) {
	ctx := context.Background()
	h, c, reg := harness(t)
	p := basePolicy
	p.TextTTL, p.VerdictTTL, p.LinkTTL = 72*time.Hour, 10*24*time.Hour, 49*time.Hour
	k := newCache(t, c, p)
	text, _ := vm2.NewSafetyTextKey(digest("hello"), "rules-42")
	verdict, _ := vm2.NewSafetyVerdictKey(digest("file"), "cfg-3", "clamav-1.4")
	link, _ := vm2.NewSafetyLinkKey(digest("https://example.com"), "rules-42", "cfg-3")

	res, err := k.SetText(ctx, text, sampleText)
	if err != nil || res != (safetycache.SetResult{Outcome: safetycache.SetWritten, TTL: vm2.SafetyTextMaxTTL, Capped: true, Stamp: 7}) {
		t.Fatalf("text: %+v %v", res, err)
	}
	if res, err = k.SetVerdict(ctx, verdict, sampleVerdict); err != nil || res != (safetycache.SetResult{Outcome: safetycache.SetWritten, TTL: 10 * 24 * time.Hour, Stamp: 7}) {
		t.Fatalf("verdict: %+v %v", res, err)
	}
	if res, err = k.SetLink(ctx, link, sampleLink); err != nil || !res.Capped || res.TTL != vm2.SafetyLinkMaxTTL {
		t.Fatalf("link: %+v %v", res, err)
	}
	for key, want := range map[string]time.Duration{text.String(): 48 * time.Hour, verdict.String(): 240 * time.Hour, link.String(): 48 * time.Hour} {
		if got := ttlOf(t, h, key); got != want {
			t.Errorf("%s: TTL %v, want %v", key, got, want)
		}
	}
	for kind, want := range map[safetyrecord.Kind]float64{safetyrecord.KindText: 1, safetyrecord.KindVerdict: 0, safetyrecord.KindLink: 1, safetyrecord.KindDNS: 0} {
		if got := promtest.Value(t, reg, "han_safety_cache_ttl_clamped_total", map[string]string{"kind": string(kind)}); got != want {
			t.Errorf("clamps of %s: %v, want %v", kind, got, want)
		}
	}

	if got, hit, err := k.GetText(ctx, text); err != nil || !hit || !cmp.Equal(got, sampleText) {
		t.Fatalf("get text: %+v %v %v", got, hit, err)
	}
	// Redis keeps a key until the clock is strictly past its expiry.
	h.Clock().Advance(48 * time.Hour)
	if _, hit, _ := k.GetText(ctx, text); !hit {
		t.Fatal("the text entry left before its TTL")
	}
	h.Clock().Advance(time.Millisecond)
	if _, hit, _ := k.GetText(ctx, text); hit {
		t.Fatal("the text entry outlived its TTL")
	}
	if got := promtest.Value(t, reg, "han_safety_cache_lookups_total", map[string]string{"kind": "text", "result": "hit"}); got != 2 {
		t.Fatalf("text hits %v, want 2", got)
	}
	if got := promtest.Value(t, reg, "han_safety_cache_lookups_total", map[string]string{"kind": "text", "result": "miss"}); got != 1 {
		t.Fatalf("text misses %v, want 1", got)
	}
}

// A DNS answer or a record refused before Redis (or by the call) is neither
// reported as capped nor counted in the cap and clamp metrics, however long its
// TTL: only a write that did not fail caps anything.
func TestCapsAreCountedOnlyForWritesThatDidNotFail(t *testing.T) {
	ctx := context.Background()
	_, c, reg := harness(t)
	p := basePolicy
	p.TextTTL = 30 * 24 * time.Hour // above the text key's 48 h
	k := newCache(t, c, p)
	dnsKey, err := vm2.NewSafetyDNSKey(digest("refused.example"), vm2.DNSRRTypeA)
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]safetyrecord.DNSAnswer{
		"IPv6 in an A answer":  {RRType: vm2.DNSRRTypeA, TTL: 24 * time.Hour, Addrs: []netip.Addr{netip.MustParseAddr("2001:db8::1")}},
		"not the key's rrtype": {RRType: vm2.DNSRRTypeAAAA, TTL: 24 * time.Hour, Addrs: []netip.Addr{netip.MustParseAddr("2001:db8::1")}},
	} {
		res, err := k.SetDNS(ctx, dnsKey, a)
		if !errors.Is(err, safetyrecord.ErrInvalidRecord) || res != (safetycache.SetResult{}) {
			t.Errorf("%s: %+v %v, want safetyrecord.ErrInvalidRecord and no result", name, res, err)
		}
	}
	valid := safetyrecord.DNSAnswer{RRType: vm2.DNSRRTypeA, TTL: 24 * time.Hour, Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}}
	if res, err := k.SetDNS(ctx, vm2.SafetyDNSKey{}, valid); err == nil || res.Capped {
		t.Errorf("a DNS answer under a zero key: %+v %v", res, err)
	}
	if res, err := k.SetText(ctx, vm2.SafetyTextKey{}, sampleText); err == nil || res.Capped {
		t.Errorf("a text result under a zero key: %+v %v", res, err)
	}
	textKey, err := vm2.NewSafetyTextKey(digest("refused text"), "rules-1")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := k.SetText(ctx, textKey, safetyrecord.TextResult{Verdict: "not-a-verdict"}); !errors.Is(err, safetyrecord.ErrInvalidRecord) || res.Capped {
		t.Errorf("an invalid text result: %+v %v", res, err)
	}
	if got := promtest.Value(t, reg, "han_safety_dns_ttl_capped_total", nil); got != 0 {
		t.Errorf("DNS TTL caps counted %v for refused answers, want 0", got)
	}
	if got := promtest.Value(t, reg, "han_safety_cache_ttl_clamped_total", map[string]string{"kind": "text"}); got != 0 {
		t.Errorf("text TTL clamps counted %v for refused writes, want 0", got)
	}
	// The same answer and record, valid: capped, clamped and counted once each.
	if res, err := k.SetDNS(ctx, dnsKey, valid); err != nil || !res.Capped || res.TTL != 900*time.Second {
		t.Fatalf("a valid 24 h answer: %+v %v", res, err)
	}
	if res, err := k.SetText(ctx, textKey, sampleText); err != nil || !res.Capped || res.TTL != vm2.SafetyTextMaxTTL {
		t.Fatalf("a valid text result: %+v %v", res, err)
	}
	if got := promtest.Value(t, reg, "han_safety_dns_ttl_capped_total", nil); got != 1 {
		t.Errorf("DNS TTL caps counted %v, want 1", got)
	}
	if got := promtest.Value(t, reg, "han_safety_cache_ttl_clamped_total", map[string]string{"kind": "text"}); got != 1 {
		t.Errorf("text TTL clamps counted %v, want 1", got)
	}
}

// A DNS answer keeps its own TTL, capped at 900 s (or the policy's lower maximum);
// every cap is counted; a read serves what is left of the TTL; TTL 0 is not cached.
func TestDNSTTLIsTheAnswersCappedAt900s(t *testing.T) {
	ctx := context.Background()
	h, c, reg := harness(t)
	k := newCache(t, c, basePolicy)
	key := func(host string, rr vm2.DNSRRType) vm2.SafetyDNSKey {
		dk, err := vm2.NewSafetyDNSKey(digest(host), rr)
		if err != nil {
			t.Fatal(err)
		}
		return dk
	}
	a := safetyrecord.DNSAnswer{RRType: vm2.DNSRRTypeA, Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}
	set := func(dk vm2.SafetyDNSKey, ttl time.Duration) safetycache.SetResult {
		t.Helper()
		a.TTL = ttl
		res, err := k.SetDNS(ctx, dk, a)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	short, long := key("short.example", vm2.DNSRRTypeA), key("long.example", vm2.DNSRRTypeA)
	if res := set(short, 300*time.Second); res.Capped || res.TTL != 300*time.Second || ttlOf(t, h, short.String()) != 300*time.Second {
		t.Fatalf("300 s answer: %+v", res)
	}
	if res := set(long, 24*time.Hour); !res.Capped || res.TTL != 900*time.Second || ttlOf(t, h, long.String()) != 900*time.Second {
		t.Fatalf("24 h answer: %+v", res)
	}
	if res := set(key("exact.example", vm2.DNSRRTypeA), 900*time.Second); res.Capped {
		t.Fatalf("900 s answer capped: %+v", res)
	}
	// The active policy may lower the cap, never raise it above the spec's.
	p := basePolicy
	p.DNSMaxTTL = time.Minute
	if err := k.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	if res := set(key("lowered.example", vm2.DNSRRTypeA), 300*time.Second); !res.Capped || res.TTL != time.Minute {
		t.Fatalf("policy cap: %+v", res)
	}
	p.DNSMaxTTL = 2 * time.Hour
	if err := k.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	if res := set(key("raised.example", vm2.DNSRRTypeA), 1200*time.Second); !res.Capped || res.TTL != 900*time.Second {
		t.Fatalf("a policy above 900 s: %+v", res)
	}
	if got := promtest.Value(t, reg, "han_safety_dns_ttl_capped_total", nil); got != 3 {
		t.Fatalf("DNS TTL caps counted %v, want 3", got)
	}
	// TTL 0 means "do not cache".
	if res := set(key("zero.example", vm2.DNSRRTypeA), 0); res.Outcome != safetycache.SetSkipped {
		t.Fatalf("TTL 0: %+v", res)
	}
	if _, ok := h.Keyspace()[key("zero.example", vm2.DNSRRTypeA).String()]; ok {
		t.Fatal("an answer with TTL 0 was cached")
	}

	// A read serves the answer with what is left of its TTL, never a fresh one.
	h.Clock().Advance(100 * time.Second)
	got, hit, err := k.GetDNS(ctx, short)
	if err != nil || !hit || got.TTL != 200*time.Second || !cmp.Equal(got.Addrs, a.Addrs, addrCmp) {
		t.Fatalf("cached answer: %+v %v %v", got, hit, err)
	}
	h.Clock().Advance(200*time.Second + time.Millisecond)
	if _, hit, _ := k.GetDNS(ctx, short); hit {
		t.Fatal("the answer outlived its own TTL")
	}
	// The answer's type must be the key's.
	if _, err := k.SetDNS(ctx, key("x.example", vm2.DNSRRTypeAAAA), a); !errors.Is(err, safetyrecord.ErrInvalidRecord) {
		t.Fatalf("an A answer under an AAAA key: %v", err)
	}
}

// An older generation never replaces a newer one, the same generation refreshes,
// and only the active generation's entry is a hit.
func TestCacheVersionStamps(t *testing.T) {
	ctx := context.Background()
	h, c, reg := harness(t)
	old, cur := basePolicy, basePolicy
	old.Generation, cur.Generation = 6, 7
	kOld, kCur := newCache(t, c, old), newCache(t, c, cur)
	key, _ := vm2.NewSafetyVerdictKey(digest("file"), "cfg-3", "bundle-1")
	newer := safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictBlock, RuleIDs: []string{"gen-7"}}
	older := safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictAllow, RuleIDs: []string{"gen-6"}}

	if res, err := kCur.SetVerdict(ctx, key, newer); err != nil || res.Outcome != safetycache.SetWritten || res.Stamp != 7 {
		t.Fatalf("gen 7 write: %+v %v", res, err)
	}
	h.Clock().Advance(time.Hour)
	ttl := ttlOf(t, h, key.String())
	if res, err := kOld.SetVerdict(ctx, key, older); err != nil || res.Outcome != safetycache.SetStale || res.Stamp != 7 {
		t.Fatalf("gen 6 write over gen 7: %+v %v", res, err)
	}
	if ttlOf(t, h, key.String()) != ttl {
		t.Fatal("a refused write touched the TTL")
	}
	if got, hit, err := kCur.GetVerdict(ctx, key); err != nil || !hit || !cmp.Equal(got, newer) {
		t.Fatalf("gen 7 read: %+v %v %v", got, hit, err)
	}
	if _, hit, err := kOld.GetVerdict(ctx, key); err != nil || hit {
		t.Fatalf("gen 6 read of a gen 7 entry: hit %v, %v", hit, err)
	}
	// The same generation refreshes value and TTL.
	if res, err := kCur.SetVerdict(ctx, key, newer); err != nil || res.Outcome != safetycache.SetWritten || ttlOf(t, h, key.String()) != cur.VerdictTTL {
		t.Fatalf("gen 7 refresh: %+v %v", res, err)
	}
	// A newer generation replaces it, and gen 7 now misses.
	next := cur
	next.Generation = 8
	if err := kCur.SetPolicy(next); err != nil {
		t.Fatal(err)
	}
	if _, hit, _ := kCur.GetVerdict(ctx, key); hit {
		t.Fatal("gen 8 read a gen 7 entry")
	}
	if res, err := kCur.SetVerdict(ctx, key, older); err != nil || res.Outcome != safetycache.SetWritten || res.Stamp != 8 {
		t.Fatalf("gen 8 write: %+v %v", res, err)
	}
	if err := kCur.SetPolicy(cur); !errors.Is(err, safetycache.ErrStalePolicy) {
		t.Fatalf("going back to gen 7: %v", err)
	}
	if got := promtest.Value(t, reg, "han_safety_cache_lookups_total", map[string]string{"kind": "verdict", "result": "stale"}); got != 2 {
		t.Fatalf("stale reads %v, want 2", got)
	}
	if got := promtest.Value(t, reg, "han_safety_cache_writes_total", map[string]string{"kind": "verdict", "result": "stale"}); got != 1 {
		t.Fatalf("stale writes %v, want 1", got)
	}
}

// A lost cache (eviction, flush, an empty restart) reads as misses and is rebuilt by
// the callers' own writes.
func TestCacheLossAndRebuild(t *testing.T) {
	ctx := context.Background()
	h, c, _ := harness(t)
	k := newCache(t, c, basePolicy)
	var keys []vm2.SafetyTextKey
	for i := 0; i < 20; i++ {
		key, _ := vm2.NewSafetyTextKey(digest(string(rune('a'+i))), "rules-1")
		keys = append(keys, key)
		if _, err := k.SetText(ctx, key, sampleText); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range keys {
		if _, err := h.Do("DEL", key.String()); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range keys {
		if _, hit, err := k.GetText(ctx, key); hit || err != nil {
			t.Fatalf("after the loss: hit %v, %v", hit, err)
		}
		if res, err := k.SetText(ctx, key, sampleText); err != nil || res.Outcome != safetycache.SetWritten {
			t.Fatalf("rebuild: %+v %v", res, err)
		}
		if got, hit, err := k.GetText(ctx, key); !hit || err != nil || !cmp.Equal(got, sampleText) {
			t.Fatalf("after the rebuild: %+v %v %v", got, hit, err)
		}
	}
}

// Damaged entries: a bad value is safetyrecord.ErrCorrupt (and a miss), a bad stamp is a miss,
// and the next write repairs both.
func TestCacheDamagedEntries(t *testing.T) {
	ctx := context.Background()
	h, c, reg := harness(t)
	k := newCache(t, c, basePolicy)
	key, _ := vm2.NewSafetyTextKey(digest("x"), "rules-1")
	verdict, _ := safetyrecord.EncodeVerdict(sampleVerdict)
	for _, value := range [][]byte{[]byte("\xc1garbage"), verdict, mustMarshal(t, []any{"text/1", "allow", []string{"http://x.example/?sig=1"}, []string{}})} {
		if _, err := h.Do("HSET", key.String(), "stamp", basePolicy.Generation, "value", value); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Do("PEXPIRE", key.String(), 60000); err != nil {
			t.Fatal(err)
		}
		if _, hit, err := k.GetText(ctx, key); hit || !errors.Is(err, safetyrecord.ErrCorrupt) {
			t.Fatalf("damaged value: hit %v, %v", hit, err)
		}
	}
	if got := promtest.Value(t, reg, "han_safety_cache_lookups_total", map[string]string{"kind": "text", "result": "corrupt"}); got != 3 {
		t.Fatalf("corrupt reads %v, want 3", got)
	}
	if _, err := h.Do("HSET", key.String(), "stamp", "not-a-number"); err != nil {
		t.Fatal(err)
	}
	if _, hit, err := k.GetText(ctx, key); hit || err != nil {
		t.Fatalf("damaged stamp: hit %v, %v", hit, err)
	}
	if res, err := k.SetText(ctx, key, sampleText); err != nil || res.Outcome != safetycache.SetWritten {
		t.Fatalf("repair: %+v %v", res, err)
	}
	if got, hit, err := k.GetText(ctx, key); !hit || err != nil || !cmp.Equal(got, sampleText) {
		t.Fatalf("after the repair: %+v %v %v", got, hit, err)
	}
}

func TestCacheRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	h, c, _ := harness(t)
	k := newCache(t, c, basePolicy)
	key, _ := vm2.NewSafetyTextKey(digest("x"), "rules-1")
	if _, err := k.SetText(ctx, key, safetyrecord.TextResult{Verdict: safetyrecord.VerdictAllow, RuleIDs: []string{"raw message text here"}}); !errors.Is(err, safetyrecord.ErrInvalidRecord) {
		t.Fatalf("free text: %v", err)
	}
	if _, err := k.SetText(ctx, vm2.SafetyTextKey{}, sampleText); err == nil {
		t.Fatal("a zero key was accepted")
	}
	if _, _, err := k.GetLink(ctx, vm2.SafetyLinkKey{}); err == nil {
		t.Fatal("a zero key was read")
	}
	if len(h.Keyspace()) != 0 {
		t.Fatalf("refused writes left keys: %v", h.Keyspace())
	}
	for _, p := range []safetycache.Policy{
		{Generation: 0, TextTTL: time.Hour, VerdictTTL: time.Hour, LinkTTL: time.Hour, DNSMaxTTL: time.Hour},
		{Generation: 1 << 53, TextTTL: time.Hour, VerdictTTL: time.Hour, LinkTTL: time.Hour, DNSMaxTTL: time.Hour},
		{Generation: 1, VerdictTTL: time.Hour, LinkTTL: time.Hour, DNSMaxTTL: time.Hour},
		{Generation: 1, TextTTL: time.Hour, VerdictTTL: time.Hour, LinkTTL: time.Hour},
	} {
		if _, err := safetycache.New(c, p); !errors.Is(err, safetycache.ErrInvalidPolicy) {
			t.Fatalf("%+v: %v", p, err)
		}
	}
}

// mustMarshal is v in MessagePack: what a buggy or hostile writer could store.
func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
