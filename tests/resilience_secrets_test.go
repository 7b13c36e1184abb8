package tests

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/logtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/safetytest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/hanchat/luagen/services/vm1/coord"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/hanchat/luagen/services/vm1/jwks"
	"github.com/hanchat/luagen/services/vm1/presence"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/hanchat/luagen/services/vm1/settings"
	"github.com/hanchat/luagen/services/vm2/callerlimit"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
)

// bufferLogger is go-redis's internal log, kept for the test.
type bufferLogger struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *bufferLogger) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, format+"\n", v...)
}

func (l *bufferLogger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// captureRedisLog sends go-redis's internal log, at its most verbose, to a
// buffer until the test ends, then back to go-redis's default (stderr, errors
// only).
func captureRedisLog(t *testing.T) *bufferLogger {
	l := &bufferLogger{}
	redis.SetLogger(l)
	logging.SetLogLevel(logging.LogLevelDebug)
	t.Cleanup(func() {
		logging.SetLogLevel(logging.LogLevelError)
		logging.Enable()
	})
	return l
}

// exposition is what a Prometheus scrape of reg returns.
func exposition(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// subscriberLog is every line the Subscriber logged.
func subscriberLog(r *logtest.Recorder) string {
	var b strings.Builder
	for _, rec := range r.Records("") {
		b.WriteString(rec.Line() + "\n")
	}
	return b.String()
}

// Seed 000 §12 and seed 004 §8 "logs/metrics contain no secret, value, PII or
// message text". A workload feeds the packages an ACL user's password (in the
// URL), the HMAC secret, raw client addresses (IPv4 and IPv6), a raw
// Idempotency-Key, a user id, message-like text and a presigned-URL-like value:
// rate limits, idempotent calls (a presigned Location header included),
// refused inputs of every package (malformed subjects and requests, text and a
// URL as rule ids of Safety cache records, a corrupt settings snapshot and a
// Pub/Sub payload holding the text, a forged presence connection), a wrong
// password, and an outage of both servers with reconnects. Then none of these
// outputs holds any of the values:
//   - every error string a call returned;
//   - the Prometheus exposition of every registry;
//   - what the realtime Subscriber logged (malformed payloads, lost connections);
//   - Message Safety's health answer;
//   - both redis-server logs (loglevel debug);
//   - go-redis's internal log (debug level).
//
// The files of both servers (AOF, RDB, aclfile, config) hold no raw address,
// Idempotency-Key, message text, URL, password or secret either (user ids and
// HMACs are part of the key patterns by design; the snapshot the test
// corrupts by hand is written with a text of its own).
func TestResilienceSecretsAbsentFromOutputs(t *testing.T) {
	ctx := scripttest.Context(t)
	goRedisLog := captureRedisLog(t)
	var errs errorLog

	mark := scripttest.Nonce(t)
	hmacSecret := "resilience-only HMAC secret, never in production " + mark
	ipKey, err := secrets.NewHMACKey([]byte(hmacSecret))
	if err != nil {
		t.Fatal(err)
	}
	userID := uuid.NewString()
	rawIPv4, rawIPv6 := "203.0.113.199", "2001:db8:77:1::4242"
	idemKey := "idem-" + mark
	text := "hello Anna, my card number is 4000 1234 5678 9010 and I will call you at 21:00 " + mark
	handWritten := "a snapshot overwritten by hand with a private note for Boris " + mark
	presigned := "https://files.example.net/attachments/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature=" + safetytest.Digest(mark)
	wrongPassword := aclPasswords["api_backend"] + "-wrong"
	forbidden := map[string]string{
		"api_backend's password":     aclPasswords["api_backend"],
		"message_safety's password":  aclPasswords["message_safety"],
		"the HMAC secret":            hmacSecret,
		"the raw IPv4 address":       rawIPv4,
		"the raw IPv6 address":       rawIPv6,
		"the raw Idempotency-Key":    idemKey,
		"the user id":                userID,
		"the message text":           text[:40],
		"the hand-written text":      handWritten[:40],
		"the presigned URL":          presigned[:60],
		"the presigned signature":    safetytest.Digest(mark),
		"the IPv4 address's HMAC":    string(ipKey.Sum(rawIPv4)),
		"the Idempotency-Key's HMAC": string(ipKey.Sum(idemKey)),
	}

	// VM1 and VM2 under their generated config and ACL, logging everything.
	a := startACLInstance(t, "vm1", "loglevel debug")
	b := startACLInstance(t, "vm2", "loglevel debug")
	// Clients that give up at once on a dead server, so the outage is short.
	fast := func(o *redis.Options) {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, time.Second, time.Second
		o.MaxRetries, o.DialerRetries = -1, 1
	}
	db0, db1 := a.userClientWith(t, "api_backend", vm1.DB0, fast), a.userClientWith(t, "api_backend", vm1.DB1, fast)
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: db0, DB1: db1})
	if err != nil {
		t.Fatal(err)
	}
	reg1, reg2 := prometheus.NewRegistry(), prometheus.NewRegistry()
	policy := ratelimit.Policy{
		vm1.APIRouteMessagesSend: {Algorithm: ratelimit.SlidingWindow, Degraded: degraded.FailClosed, Limits: []ratelimit.Limit{
			{Scope: ratelimit.ScopeUser, Limit: 3, Window: time.Minute},
			{Scope: ratelimit.ScopeIP, Limit: 100, Window: time.Minute},
		}},
		vm1.APIRoutePublicGet: {Algorithm: ratelimit.FixedWindow, Degraded: degraded.LocalLimit, Limits: []ratelimit.Limit{
			{Scope: ratelimit.ScopeIP, Limit: 2, Window: time.Minute},
		}},
	}
	limiter, err := ratelimit.New(scripts, policy, ratelimit.Options{IPKey: ipKey, Registerer: reg1})
	if err != nil {
		t.Fatal(err)
	}
	pool := idemtest.Postgres(t)
	keeper, err := idempotency.New(scripts, idempotency.NewStore(pool), ipKey, idempotency.Options{Registerer: reg1})
	if err != nil {
		t.Fatal(err)
	}
	pres, err := presence.New(scripts, "api-1")
	if err != nil {
		t.Fatal(err)
	}
	snapshots := settings.New[resilienceSettings](scripts)
	negative := jwks.New(scripts)
	rig := startRTRig(t, db1, a.userClient(t, "api_backend", vm1.DB1), pubsub.Options{
		PingEvery: 200 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Registerer: reg1,
	})
	rig.waitFor(t, "subscribed", lastGapIs(pubsub.Subscribed))
	safetyClient, err := safetyredis.New(b.userClientWith(t, "message_safety", vm2.DB0, func(o *redis.Options) { safetytest.Impatient(o); o.ContextTimeoutEnabled = true }),
		safetyredis.Options{Registerer: reg2, RetryInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cache := safetytest.NewCache(t, safetyClient, safetytest.Policy)
	callers, err := callerlimit.New(safetyClient, map[string]callerlimit.Policy{"api-backend": {Limit: 2, Window: time.Minute, Degraded: degraded.LocalLimit, LocalLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}

	// refused records that the call refuses; each must fail and its error is kept.
	refused := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s was accepted", what)
		}
		errs.add(err)
	}
	workload := func(up bool) {
		t.Helper()
		for _, ip := range []string{rawIPv4, rawIPv6} {
			subject := ratelimit.Subject{UserID: userID, IP: netip.MustParseAddr(ip)}
			for i := 0; i < 4; i++ {
				_, err := limiter.Allow(ctx, subject, vm1.APIRouteMessagesSend)
				errs.add(err)
				_, err = limiter.Allow(ctx, subject, vm1.APIRoutePublicGet)
				errs.add(err)
			}
		}
		_, err := limiter.Allow(ctx, ratelimit.Subject{UserID: text, IP: netip.MustParseAddr(rawIPv4)}, vm1.APIRouteMessagesSend)
		refused("a user id of text", err)
		_, err = limiter.Allow(ctx, ratelimit.Subject{UserID: userID}, vm1.APIRouteMessagesSend)
		refused("a subject without its address", err)

		req := idempotency.Request{Scope: vm1.IdemScopeDownloadURL, UserID: userID, Key: idemKey, Fingerprint: idempotency.Fingerprint([]byte(text))}
		call := func(context.Context, pgx.Tx) (idempotency.Response, error) {
			return idempotency.Response{Status: 200, ResourceID: uuid.NewString(), Header: http.Header{"Location": {presigned}, "Set-Cookie": {"session=" + hmacSecret}}}, nil
		}
		for i := 0; i < 2; i++ {
			_, err := keeper.Do(ctx, req, call)
			errs.add(err)
		}
		other := req
		other.Fingerprint = idempotency.Fingerprint([]byte(presigned))
		_, err = keeper.Do(ctx, other, call)
		refused("another fingerprint", err)
		bad := req
		bad.Key = text + "\n"
		_, err = keeper.Do(ctx, bad, call)
		refused("an Idempotency-Key of text", err)
		bad = req
		bad.UserID = rawIPv4
		_, err = keeper.Do(ctx, bad, call)
		refused("an address as user id", err)

		conn, _, err := pres.Connect(ctx, userID, 1)
		errs.add(err)
		if forged, err := presence.Resume(conn.ID, uuid.NewString()); err == nil {
			_, err = pres.Heartbeat(ctx, forged, 1)
			refused("a forged connection", err)
		}
		_, _, err = pres.Connect(ctx, text, 1)
		refused("a presence user of text", err)
		_, err = coord.Delivery(text)
		refused("a lock name of text", err)
		_, err = negative.MarkMissing(ctx, text)
		errs.add(err)
		_, err = negative.KnownMissing(ctx, strings.Repeat(text, 8))
		refused("a kid above its limit", err)

		if up {
			if err := a.adminDB(vm1.DB1).Set(ctx, "han:settings:snapshot:9", handWritten, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if err := a.adminDB(vm1.DB1).Publish(ctx, rig.ch.String(), text).Err(); err != nil {
				t.Fatal(err)
			}
		}
		_, err = snapshots.Get(ctx, 9)
		refused("a snapshot holding text, or Redis down", err)

		textKey, _ := vm2.NewSafetyTextKey(safetytest.Digest(text), "rules-7")
		linkKey, _ := vm2.NewSafetyLinkKey(safetytest.Digest(presigned), "rules-7", "cfg-3")
		_, err = cache.SetText(ctx, textKey, safetyrecord.TextResult{Verdict: safetyrecord.VerdictBlock, RuleIDs: []string{text}})
		refused("text as a rule id", err)
		_, err = cache.SetLink(ctx, linkKey, safetyrecord.LinkPolicy{Class: safetyrecord.LinkMalicious, Verdict: safetyrecord.VerdictBlock, RuleIDs: []string{presigned}})
		refused("a presigned URL as a rule id", err)
		_, err = cache.SetText(ctx, textKey, safetyrecord.TextResult{Verdict: safetyrecord.VerdictBlock, RuleIDs: []string{"rule.pii.card"}})
		errs.add(err)
		_, _, err = cache.GetText(ctx, textKey)
		errs.add(err)
		for i := 0; i < 3; i++ {
			_, err = callers.Allow(ctx, "api-backend", 1)
			errs.add(err)
		}
		_, err = callers.Allow(ctx, text, 1)
		refused("a caller of text", err)
	}
	workload(true)
	rig.waitFor(t, "the malformed payload dropped", func(*rtApp) bool { return rig.sub.Stats().Malformed == 1 })

	// A wrong password, then an outage of both servers with the workload
	// running on, and the reconnects.
	wrong := redis.NewClient(&redis.Options{Addr: a.srv.Addr, Username: "api_backend", Password: wrongPassword, MaxRetries: -1})
	refused("a wrong password", wrong.Ping(ctx).Err())
	_ = wrong.Close()
	a.srv.Kill()
	b.srv.Kill()
	workload(false)
	health := httptest.NewRecorder()
	safetyClient.HealthHandler().ServeHTTP(health, httptest.NewRequest(http.MethodGet, "/health", nil))
	a.srv.Restart()
	b.srv.Restart()
	rig.waitFor(t, "reconnected", lastGapIs(pubsub.Reconnected))
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		_, err := limiter.Allow(ctx, ratelimit.Subject{UserID: uuid.NewString(), IP: netip.MustParseAddr("192.0.2.1")}, vm1.APIRouteMessagesSend)
		return err == nil
	}) {
		t.Fatal("the limiter did not recover")
	}
	workload(true)

	outputs := map[string]string{
		"the errors":             errs.text(),
		"the subscriber's log":   subscriberLog(rig.logs),
		"VM1's metrics":          exposition(t, reg1),
		"VM2's metrics":          exposition(t, reg2),
		"the health answer":      health.Body.String(),
		"VM1's redis-server log": a.srv.Log(),
		"VM2's redis-server log": b.srv.Log(),
		"go-redis's log":         goRedisLog.String(),
	}
	// The capture worked: each output holds what the workload made.
	for name, want := range map[string][]string{
		"the errors":             {"invalid", "unavailable", "WRONGPASS", "reused with another request"},
		"the subscriber's log":   {"malformed", "connection lost"},
		"VM1's metrics":          {"han_api_ratelimit_decisions_total", "han_api_idempotency_total"},
		"VM2's metrics":          {"han_safety_cache_lookups_total", "han_safety_rate_limit_decisions_total"},
		"the health answer":      {"degraded"},
		"VM1's redis-server log": {"Ready to accept connections"},
		"VM2's redis-server log": {"Ready to accept connections"},
		"go-redis's log":         {"dial"},
	} {
		for _, w := range want {
			if !strings.Contains(strings.ToLower(outputs[name]), strings.ToLower(w)) {
				t.Errorf("%s hold no %q: the capture missed the workload", name, w)
			}
		}
	}
	for name, out := range outputs {
		for what, v := range forbidden {
			if strings.Contains(out, v) {
				i := strings.Index(out, v)
				t.Errorf("%s hold %s: …%s…", name, what, out[max(0, i-80):min(len(out), i+len(v)+20)])
			}
		}
	}

	// What Redis holds and persists: user ids and HMACs are part of the keys by
	// design; nothing else fed in may be there.
	a.srv.Stop()
	b.srv.Stop()
	stored := map[string]string{
		"api_backend's password":    aclPasswords["api_backend"],
		"message_safety's password": aclPasswords["message_safety"],
		"the HMAC secret":           hmacSecret,
		"the raw IPv4 address":      rawIPv4,
		"the raw IPv6 address":      rawIPv6,
		"the raw Idempotency-Key":   idemKey,
		"the presigned URL":         presigned[:60],
		"the presigned signature":   safetytest.Digest(mark),
		"the message text":          text[:40],
	}
	for _, dir := range []string{a.srv.Dir, b.srv.Dir} {
		files := 0
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Base(path) == "redis.log" {
				return err
			}
			files++
			content, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for what, v := range stored {
				if bytes.Contains(content, []byte(v)) {
					t.Errorf("%s holds %s", path, what)
				}
			}
			return nil
		})
		if err != nil || files < 2 {
			t.Fatalf("walked %d files of %s: %v", files, dir, err)
		}
	}
	if errs.len() < 20 {
		t.Errorf("only %d errors were captured", errs.len())
	}
}
