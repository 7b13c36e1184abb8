// Package safetycache is Message Safety's typed hot cache on its Redis (vm2,
// seed 004 §3): text results, file verdicts, link policies and DNS answers
// (safetyrecord's records), read and written through a safetyredis.Client.
//
// Every entry carries the active config generation as its version stamp: a
// write stamped older than the stored entry never replaces it, and a read by
// any other generation is a miss. TTLs come from the active Policy, clamped to
// each key's maximum in keyspec.yaml; a DNS answer keeps its own TTL, capped at
// 900 s. While Redis is unavailable reads are misses and writes are dropped,
// and both are counted; the caches warm again lazily, as callers set what they
// compute.
//
// Metrics, on the Client's Registerer: han_safety_cache_lookups_total and
// han_safety_cache_writes_total by kind and result,
// han_safety_cache_ttl_clamped_total by kind, han_safety_dns_ttl_capped_total.
package safetycache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/services/vm2/safetyrecord"
	"github.com/hanchat/luagen/services/vm2/safetyredis"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrInvalidPolicy: a Policy the Cache cannot use.
	ErrInvalidPolicy = errors.New("invalid policy")
	// ErrStalePolicy: SetPolicy was given a generation older than the active one.
	ErrStalePolicy = errors.New("policy generation older than the active one")
)

// maxStamp is the largest generation a script argument may carry (2^53 - 1: exact
// in Lua's numbers).
const maxStamp = 1<<53 - 1

// Policy is what the hot caches take from Message Safety's active config.
type Policy struct {
	// Generation is the active config and rules generation, 1..2^53-1, raised on every
	// change. It stamps each entry written; an entry stamped higher is never replaced,
	// and only an entry of exactly this generation is a hit.
	Generation int64
	// TextTTL, VerdictTTL and LinkTTL are the configured lifetimes of text results,
	// file verdicts and link-policy results. A write clamps each to its key's maximum
	// in keyspec.yaml (vm2.SafetyTextMaxTTL 48 h, vm2.SafetyVerdictMaxTTL 30 d,
	// vm2.SafetyLinkMaxTTL 48 h) and counts the clamp.
	TextTTL, VerdictTTL, LinkTTL time.Duration
	// DNSMaxTTL is the active hard maximum of a cached DNS answer; a DNS write keeps
	// the answer's own TTL, capped at the lower of DNSMaxTTL and vm2.SafetyDNSMaxTTL
	// (900 s).
	DNSMaxTTL time.Duration
}

func (p Policy) validate() error {
	if p.Generation < 1 || p.Generation > maxStamp {
		return fmt.Errorf("safety: policy: generation %d outside 1..%d: %w", p.Generation, int64(maxStamp), ErrInvalidPolicy)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"TextTTL", p.TextTTL}, {"VerdictTTL", p.VerdictTTL}, {"LinkTTL", p.LinkTTL}, {"DNSMaxTTL", p.DNSMaxTTL}} {
		if f.d < time.Millisecond {
			return fmt.Errorf("safety: policy: %s %s: want at least 1ms: %w", f.name, f.d, ErrInvalidPolicy)
		}
	}
	return nil
}

// Cache is the typed hot cache of Message Safety: text results, file verdicts, link
// policies and DNS answers, stamped with the active Policy's generation. A Redis
// failure reads as a miss and a write it prevents is dropped: the caller computes
// the value (or reads it from PostgreSQL) and the cache warms again by itself. It is
// safe for concurrent use.
type Cache struct {
	c       *safetyredis.Client
	scripts *vm2.Scripts
	timeout time.Duration // the Client's CacheTimeout
	m       *metrics
	mu      sync.RWMutex
	policy  Policy
}

// New makes a Cache on c following policy p.
func New(c *safetyredis.Client, p Policy) (*Cache, error) {
	if c == nil {
		return nil, errors.New("safety: safetycache.New: nil Client")
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	o := c.Options()
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("safety: safetycache.New: metrics: %w", err)
	}
	return &Cache{c: c, scripts: c.Scripts(), timeout: o.CacheTimeout, m: m, policy: p}, nil
}

// Policy is the active policy.
func (k *Cache) Policy() Policy {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.policy
}

// SetPolicy makes p the active policy when the config changes. A generation lower
// than the active one is refused with ErrStalePolicy (a rollback is a new, higher
// generation); the same generation may change the TTLs.
func (k *Cache) SetPolicy(p Policy) error {
	if err := p.validate(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if p.Generation < k.policy.Generation {
		return fmt.Errorf("safety: policy generation %d, active %d: %w", p.Generation, k.policy.Generation, ErrStalePolicy)
	}
	k.policy = p
	return nil
}

// SetOutcome is what a Set did.
type SetOutcome string

// Set outcomes; each is also a result label of han_safety_cache_writes_total.
const (
	SetWritten SetOutcome = "written" // stored (or refreshed, for the same generation)
	SetStale   SetOutcome = "stale"   // not stored: the entry holds a newer generation
	SetDropped SetOutcome = "dropped" // not stored: Redis is unavailable (degraded mode)
	SetSkipped SetOutcome = "skipped" // not stored: nothing to cache (a DNS answer with no TTL left)
)

// SetResult reports a Set.
type SetResult struct {
	Outcome SetOutcome
	// TTL is the lifetime the entry was given (or would have been), after clamping.
	TTL time.Duration
	// Capped is set when the configured TTL (or the DNS answer's) was above the cap.
	Capped bool
	// Stamp is the generation the entry holds after the call (0 when Redis did not answer).
	Stamp int64
}

// GetText reads the text-rules result of key under the active generation.
func (k *Cache) GetText(ctx context.Context, key vm2.SafetyTextKey) (safetyrecord.TextResult, bool, error) {
	r, _, hit, err := lookup(ctx, k, safetyrecord.KindText, key, safetyrecord.DecodeText)
	return r, hit, err
}

// SetText stores r under key for the policy's TextTTL (at most 48 h).
func (k *Cache) SetText(ctx context.Context, key vm2.SafetyTextKey, r safetyrecord.TextResult) (SetResult, error) {
	b, err := safetyrecord.EncodeText(r)
	p := k.Policy()
	return k.store(ctx, safetyrecord.KindText, key, b, err, p, p.TextTTL, vm2.SafetyTextMaxTTL)
}

// GetVerdict reads the file verdict of key under the active generation.
func (k *Cache) GetVerdict(ctx context.Context, key vm2.SafetyVerdictKey) (safetyrecord.FileVerdict, bool, error) {
	v, _, hit, err := lookup(ctx, k, safetyrecord.KindVerdict, key, safetyrecord.DecodeVerdict)
	return v, hit, err
}

// SetVerdict stores v under key for the policy's VerdictTTL (at most 30 d).
func (k *Cache) SetVerdict(ctx context.Context, key vm2.SafetyVerdictKey, v safetyrecord.FileVerdict) (SetResult, error) {
	b, err := safetyrecord.EncodeVerdict(v)
	p := k.Policy()
	return k.store(ctx, safetyrecord.KindVerdict, key, b, err, p, p.VerdictTTL, vm2.SafetyVerdictMaxTTL)
}

// GetLink reads the link-policy result of key under the active generation.
func (k *Cache) GetLink(ctx context.Context, key vm2.SafetyLinkKey) (safetyrecord.LinkPolicy, bool, error) {
	l, _, hit, err := lookup(ctx, k, safetyrecord.KindLink, key, safetyrecord.DecodeLink)
	return l, hit, err
}

// SetLink stores l under key for the policy's LinkTTL (at most 48 h).
func (k *Cache) SetLink(ctx context.Context, key vm2.SafetyLinkKey, l safetyrecord.LinkPolicy) (SetResult, error) {
	b, err := safetyrecord.EncodeLink(l)
	p := k.Policy()
	return k.store(ctx, safetyrecord.KindLink, key, b, err, p, p.LinkTTL, vm2.SafetyLinkMaxTTL)
}

// GetDNS reads the DNS answer of key under the active generation. Its TTL is what
// is left of the answer's own TTL; classify it again under the current policy.
func (k *Cache) GetDNS(ctx context.Context, key vm2.SafetyDNSKey) (safetyrecord.DNSAnswer, bool, error) {
	want := dnsKeyType(key)
	a, ttl, hit, err := lookup(ctx, k, safetyrecord.KindDNS, key, func(b []byte) (safetyrecord.DNSAnswer, error) {
		a, err := safetyrecord.DecodeDNS(b)
		if err == nil && a.RRType != want {
			return safetyrecord.DNSAnswer{}, &safetyrecord.RecordError{Record: string(safetyrecord.KindDNS), Field: "rrtype", Reason: "not the key's record type", Err: safetyrecord.ErrCorrupt}
		}
		return a, err
	})
	if err != nil || !hit {
		return safetyrecord.DNSAnswer{}, false, err
	}
	a.TTL = ttl
	return a, true, nil
}

// SetDNS stores the answer a under key for a.TTL, capped at the lower of the
// policy's DNSMaxTTL and 900 s; an answer whose TTL is under 1 ms is not cached
// (SetSkipped). a.RRType must be the key's record type. A cap is reported
// (SetResult.Capped) and counted only when SetDNS returns no error: an answer
// refused before Redis, or a failed call, caps nothing.
func (k *Cache) SetDNS(ctx context.Context, key vm2.SafetyDNSKey, a safetyrecord.DNSAnswer) (SetResult, error) {
	b, err := safetyrecord.EncodeDNS(a)
	if err == nil && key.String() != "" && a.RRType != dnsKeyType(key) {
		err = &safetyrecord.RecordError{Record: string(safetyrecord.KindDNS), Field: "rrtype", Reason: "not the key's record type", Err: safetyrecord.ErrInvalidRecord}
	}
	p := k.Policy()
	ttl := a.TTL.Truncate(time.Millisecond)
	if err == nil && ttl < time.Millisecond && key.String() != "" {
		k.m.writes.WithLabelValues(string(safetyrecord.KindDNS), string(SetSkipped)).Inc()
		return SetResult{Outcome: SetSkipped}, nil
	}
	limit := min(p.DNSMaxTTL, vm2.SafetyDNSMaxTTL)
	capped := false
	if ttl > limit {
		ttl, capped = limit, true
	}
	res, err := k.write(ctx, safetyrecord.KindDNS, key, b, err, p.Generation, ttl, vm2.SafetyDNSMaxTTL)
	if err != nil {
		return SetResult{}, err // a refused answer or call: no cap was applied
	}
	if capped {
		k.m.dnsTTLCapped.Inc()
		res.Capped = true
	}
	return res, nil
}

// dnsKeyType is the record type a DNS key was built with: its last part.
func dnsKeyType(key vm2.SafetyDNSKey) vm2.DNSRRType {
	s := key.String()
	return vm2.DNSRRType(s[strings.LastIndexByte(s, ':')+1:])
}

// lookup runs cache_get under the active generation and decodes a hit.
func lookup[T any](ctx context.Context, k *Cache, kind safetyrecord.Kind, key vm2.CacheGetEntry, decode func([]byte) (T, error)) (T, time.Duration, bool, error) {
	var zero T
	stamp := k.Policy().Generation
	res, err := safetyredis.Do(ctx, k.c, k.timeout, func(ctx context.Context) (vm2.CacheGetResult, error) {
		return k.scripts.CacheGet(ctx, key, vm2.CacheGetArgs{Stamp: stamp})
	})
	result := lookupHit
	defer func() { k.m.lookups.WithLabelValues(string(kind), result).Inc() }()
	switch {
	case errors.Is(err, safetyredis.ErrUnavailable):
		result = lookupUnavailable
		return zero, 0, false, nil
	case err != nil:
		result = lookupError
		return zero, 0, false, fmt.Errorf("safety: %s cache get: %w", kind, err)
	case !res.Hit && res.StoredStamp != 0:
		result = lookupStale
		return zero, 0, false, nil
	case !res.Hit:
		result = lookupMiss
		return zero, 0, false, nil
	}
	v, err := decode(res.Value)
	if err != nil {
		result = lookupCorrupt
		return zero, 0, false, err
	}
	return v, res.TTL, true, nil
}

// store clamps the configured ttl to the key's maximum and writes. A clamp is
// reported and counted only for a write that did not fail.
func (k *Cache) store(ctx context.Context, kind safetyrecord.Kind, key vm2.CacheSetEntry, value []byte, encErr error, p Policy, ttl, max time.Duration) (SetResult, error) {
	capped := ttl > max
	if capped {
		ttl = max
	}
	res, err := k.write(ctx, kind, key, value, encErr, p.Generation, ttl.Truncate(time.Millisecond), max)
	if err != nil {
		return SetResult{}, err
	}
	if capped {
		k.m.ttlClamped.WithLabelValues(string(kind)).Inc()
		res.Capped = true
	}
	return res, nil
}

// write runs cache_set with the generation as stamp; max is passed too, so the
// script enforces the key's cap even if this code did not.
func (k *Cache) write(ctx context.Context, kind safetyrecord.Kind, key vm2.CacheSetEntry, value []byte, encErr error, stamp int64, ttl, max time.Duration) (SetResult, error) {
	count := func(r string) { k.m.writes.WithLabelValues(string(kind), r).Inc() }
	if encErr != nil {
		count(writeError)
		return SetResult{}, encErr
	}
	res, err := safetyredis.Do(ctx, k.c, k.timeout, func(ctx context.Context) (vm2.CacheSetResult, error) {
		return k.scripts.CacheSet(ctx, key, vm2.CacheSetArgs{Value: value, Stamp: stamp, TTL: ttl, MaxTTL: max})
	})
	switch {
	case errors.Is(err, safetyredis.ErrUnavailable):
		count(string(SetDropped))
		return SetResult{Outcome: SetDropped, TTL: ttl}, nil
	case err != nil:
		count(writeError)
		return SetResult{}, fmt.Errorf("safety: %s cache set: %w", kind, err)
	case !res.Written:
		count(string(SetStale))
		return SetResult{Outcome: SetStale, TTL: ttl, Stamp: res.Stamp}, nil
	}
	count(string(SetWritten))
	return SetResult{Outcome: SetWritten, TTL: ttl, Stamp: res.Stamp}, nil
}
