package tests

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/vm1/coord"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/hanchat/luagen/services/vm1/settings"
	"github.com/hanchat/luagen/services/vm2/callerlimit"
	"github.com/hanchat/luagen/services/vm2/safetycache"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/redis/go-redis/v9"
)

// restoreEmpty is the empty restore of seed 000 §10 and seed 004 §6: the
// server is lost (SIGKILL), its data files are deleted, and it comes back on
// the same address with the same config and ACL, holding nothing.
func restoreEmpty(t *testing.T, a *aclInstance) {
	t.Helper()
	a.srv.Kill()
	for _, name := range []string{"appendonlydir", "dump.rdb"} {
		if err := os.RemoveAll(filepath.Join(a.srv.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	a.srv.Restart()
	for db := 0; db < 16; db++ {
		if n := a.adminDB(db).DBSize(context.Background()).Val(); n != 0 {
			t.Fatalf("db%d holds %d keys after the empty restore", db, n)
		}
	}
}

// Seed 000 §10 "Restore: api-backend warms idempotency from durable records,
// realtime recovers by reconnect/polling" and §12 "empty restore", on the
// generated VM1 config and ACL: after an empty restore
//   - 64 concurrent requests run scripts the server no longer has: each
//     NOSCRIPT is recovered inside the wrapper, no error reaches a caller;
//   - the rate limit starts fresh: exactly its limit of them is allowed;
//   - a completed idempotent call answers from PostgreSQL and warms Redis,
//     WarmRecent warms the others, and no call runs twice;
//   - locks, settings and presence start from nothing and work.
func TestResilienceEmptyRestoreVM1(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a := startACLInstance(t, "vm1")
	const limit = 20
	policy := ratelimit.Policy{vm1.APIRouteMessagesSend: {Algorithm: ratelimit.SlidingWindow, Degraded: degraded.FailClosed, Limits: []ratelimit.Limit{
		{Scope: ratelimit.ScopeUser, Limit: limit, Window: time.Minute},
		{Scope: ratelimit.ScopeIP, Limit: 10 * limit, Window: time.Minute},
	}}}
	s := newVM1Stack(t, a, nil, policy)
	if err := runtime.Preload(ctx, s.db0, vm1.AllScripts()...); err != nil {
		t.Fatal(err)
	}
	subject := ratelimit.Subject{UserID: uuid.NewString(), IP: netip.MustParseAddr("192.0.2.44")}
	for i := 0; i < limit; i++ {
		if d, err := s.limiter.Allow(ctx, subject, vm1.APIRouteMessagesSend); err != nil || !d.Allowed {
			t.Fatalf("allow %d: %+v %v", i, d, err)
		}
	}
	if d, err := s.limiter.Allow(ctx, subject, vm1.APIRouteMessagesSend); err != nil || d.Allowed {
		t.Fatalf("over the limit: %+v %v", d, err)
	}
	reqs := make([]idempotency.Request, 3)
	outs := make([]idempotency.Outcome, 3)
	calls := make([]idemtest.Counter, 3)
	for i := range reqs {
		reqs[i] = idemtest.Request(t, vm1.IdemScopeMessageSend, "restore-"+scripttest.Nonce(t))
		var err error
		if outs[i], err = s.keeper.Do(ctx, reqs[i], calls[i].Call(reqs[i].Key, idemtest.Created(), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.settings.Put(ctx, 5, resilienceSettings{Limit: 5}); err != nil {
		t.Fatal(err)
	}

	restoreEmpty(t, a)
	admin0, admin1 := a.adminDB(vm1.DB0), a.adminDB(vm1.DB1)
	if exists, err := admin0.ScriptExists(ctx, vm1.RateLimitSlidingScript.SHA1()).Result(); err != nil || exists[0] {
		t.Fatalf("the restored server knows the script: %v %v", exists, err)
	}

	// Rate limits: fresh, exact, and no NOSCRIPT reaches a caller.
	var allowed, denied, failed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d, err := s.limiter.Allow(ctx, subject, vm1.APIRouteMessagesSend)
			switch {
			case err != nil:
				failed.Add(1)
				t.Errorf("a caller got an error after the restore: %v", err)
			case d.Degraded:
				failed.Add(1)
				t.Errorf("a degraded decision with Redis up: %+v", d)
			case d.Allowed:
				allowed.Add(1)
			default:
				denied.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if allowed.Load() != limit || denied.Load() != 64-limit || failed.Load() != 0 {
		t.Fatalf("after the restore: %d allowed, %d denied, %d failed; want %d, %d, 0", allowed.Load(), denied.Load(), failed.Load(), limit, 64-limit)
	}
	if redistest.CommandCalls(t, admin0, "script|load") < 1 {
		t.Fatal("no script was loaded again: the calls did not go through NOSCRIPT recovery")
	}

	// Idempotency: the durable rows answer and warm Redis.
	out, err := s.keeper.Do(ctx, reqs[0], calls[0].Call(reqs[0].Key, idemtest.Created(), nil))
	if err != nil || !out.Replayed || out.Source != idempotency.SourceDurable || !cmp.Equal(out.Response, outs[0].Response) {
		t.Fatalf("a completed call after the restore: %+v %v, want its durable answer", out, err)
	}
	n, err := s.keeper.WarmRecent(ctx, 100)
	if err != nil || n < 2 {
		t.Fatalf("WarmRecent: %d %v, want the other two completed records", n, err)
	}
	for i, req := range reqs {
		out, err := s.keeper.Do(ctx, req, calls[i].Call(req.Key, idemtest.Created(), nil))
		if err != nil || out.Source != idempotency.SourceRedis || !cmp.Equal(out.Response, outs[i].Response) {
			t.Errorf("call %d after warming: %+v %v, want the warmed Redis record", i, out, err)
		}
		if calls[i].Runs.Load() != 1 || s.sideEffects(t, req.Key) != 1 {
			t.Errorf("call %d: runs %d, side effects %d; want 1", i, calls[i].Runs.Load(), s.sideEffects(t, req.Key))
		}
	}

	// Settings miss (read the source again) and warm; locks and presence work.
	if _, err := s.settings.Get(ctx, 5); !errors.Is(err, settings.ErrNotFound) {
		t.Errorf("settings after the restore: %v, want ErrNotFound", err)
	}
	if err := s.settings.Put(ctx, 5, resilienceSettings{Limit: 5}); err != nil {
		t.Error(err)
	} else if got, err := s.settings.Get(ctx, 5); err != nil || got.Limit != 5 {
		t.Errorf("settings warmed: %+v %v", got, err)
	}
	name, _ := coord.SettingsRefresh("api-1")
	if err := s.locker.Do(ctx, name, coord.Options{TTL: time.Second}, func(context.Context, *coord.Lock) error { return nil }); err != nil {
		t.Errorf("a lock after the restore: %v", err)
	}
	if _, st, err := s.presence.Connect(ctx, uuid.NewString(), 1); err != nil || st.Connections != 1 {
		t.Errorf("a connection after the restore: %+v %v", st, err)
	}
	scripttest.AuditTTLs(t, admin0, vm1.Keys)
	scripttest.AuditTTLs(t, admin1, vm1.Keys)
}

// Seed 004 §6 "Restore: bring up an empty or verified instance; Safety warms
// the cache lazily" and §8 "empty restore", on the generated VM2 config and
// ACL (message_safety): after an empty restore every cache read is a miss,
// never an error; the caller limit starts fresh (exactly its limit of 16
// concurrent requests); what callers set again is read back.
func TestResilienceEmptyRestoreVM2(t *testing.T) {
	t.Parallel()
	ctx := scripttest.Context(t)
	a := startACLInstance(t, "vm2")
	// Generous timeouts: this test is about what an empty Redis answers, not
	// about a slow one (a loaded machine may take more than the defaults).
	rdb := a.userClientWith(t, "message_safety", vm2.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.ContextTimeoutEnabled = true })
	c, reg := safetytest.New(t, rdb, safetyredis.Options{RetryInterval: 50 * time.Millisecond, CacheTimeout: 5 * time.Second, RateLimitTimeout: 5 * time.Second})
	k := safetytest.NewCache(t, c, safetytest.Policy)
	const limit = 5
	l, err := callerlimit.New(c, map[string]callerlimit.Policy{"api-backend": {Limit: limit, Window: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	textKey, _ := vm2.NewSafetyTextKey(safetytest.Digest("a message"), "rules-7")
	verdictKey, _ := vm2.NewSafetyVerdictKey(safetytest.Digest("a file"), "cfg-3", "bundle-1")
	linkKey, _ := vm2.NewSafetyLinkKey(safetytest.Digest("https://example.org/a"), "rules-7", "cfg-3")
	dnsKey, _ := vm2.NewSafetyDNSKey(safetytest.Digest("example.org"), vm2.DNSRRTypeA)
	text := safetyrecord.TextResult{Verdict: safetyrecord.VerdictMonitor, RuleIDs: []string{"r.1"}, MonitorRuleIDs: []string{"m.2"}}
	verdict := safetyrecord.FileVerdict{Verdict: safetyrecord.VerdictBlock, RuleIDs: []string{"sig.9"}}
	link := safetyrecord.LinkPolicy{Class: safetyrecord.LinkSuspicious, Verdict: safetyrecord.VerdictReview, RuleIDs: []string{"l.4"}}
	dns := safetyrecord.DNSAnswer{RRType: vm2.DNSRRTypeA, TTL: 10 * time.Minute, Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}}
	set := func() {
		t.Helper()
		for _, f := range []func() (safetycache.SetResult, error){
			func() (safetycache.SetResult, error) { return k.SetText(ctx, textKey, text) },
			func() (safetycache.SetResult, error) { return k.SetVerdict(ctx, verdictKey, verdict) },
			func() (safetycache.SetResult, error) { return k.SetLink(ctx, linkKey, link) },
			func() (safetycache.SetResult, error) { return k.SetDNS(ctx, dnsKey, dns) },
		} {
			if res, err := f(); err != nil || res.Outcome != safetycache.SetWritten {
				t.Fatalf("set: %+v %v", res, err)
			}
		}
	}
	// hits reads every entry and reports how many were hits; a read never fails.
	hits := func() int {
		t.Helper()
		n := 0
		if got, hit, err := k.GetText(ctx, textKey); err != nil {
			t.Errorf("text: %v", err)
		} else if hit && cmp.Equal(got, text) {
			n++
		}
		if got, hit, err := k.GetVerdict(ctx, verdictKey); err != nil {
			t.Errorf("verdict: %v", err)
		} else if hit && cmp.Equal(got, verdict) {
			n++
		}
		if got, hit, err := k.GetLink(ctx, linkKey); err != nil {
			t.Errorf("link: %v", err)
		} else if hit && cmp.Equal(got, link) {
			n++
		}
		if got, hit, err := k.GetDNS(ctx, dnsKey); err != nil {
			t.Errorf("dns: %v", err)
		} else if hit && cmp.Equal(got.Addrs, dns.Addrs, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })) {
			n++
		}
		return n
	}
	set()
	if n := hits(); n != 4 {
		t.Fatalf("%d hits before the restore, want 4", n)
	}
	for i := 0; i < limit; i++ {
		if d, err := l.Allow(ctx, "api-backend", 1); err != nil || !d.Allowed {
			t.Fatalf("allow %d: %+v %v", i, d, err)
		}
	}
	missesBefore := promtest.Sum(t, reg, "han_safety_cache_lookups_total", map[string]string{"result": "miss"})

	restoreEmpty(t, a)
	if n := hits(); n != 0 {
		t.Fatalf("%d hits right after the empty restore, want only misses", n)
	}
	if got := promtest.Sum(t, reg, "han_safety_cache_lookups_total", map[string]string{"result": "miss"}); got < missesBefore+4 {
		t.Errorf("misses counted %v, want at least %v", got, missesBefore+4)
	}
	var allowed, failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := l.Allow(ctx, "api-backend", 1)
			switch {
			case err != nil || d.Source != callerlimit.SourceRedis:
				failed.Add(1)
				t.Errorf("after the restore: %+v %v", d, err)
			case d.Allowed:
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != limit || failed.Load() != 0 {
		t.Fatalf("after the restore %d of 16 allowed (%d failed), want %d", allowed.Load(), failed.Load(), limit)
	}
	// Callers compute the values again and set them: the cache is warm.
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		set()
		return hits() == 4
	}) {
		t.Fatal("the cache did not warm again")
	}
	scripttest.AuditTTLs(t, a.admin, vm2.Keys)
}
