package tests

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

const (
	fpA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	fpB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// idemKeys builds a record and its lock for a fresh user and key.
func idemKeys(t *testing.T) (vm1.APIIdemKey, vm1.APIIdemLockKey) {
	t.Helper()
	user, h := uuid.NewString(), testHMACKey.Sum(scripttest.Nonce(t))
	rec, err := vm1.NewAPIIdemKey(vm1.IdemScopeMessageSend, user, h)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, user, h)
	if err != nil {
		t.Fatal(err)
	}
	return rec, lock
}

// The idempotency scripts' states on the harness: absent -> in_progress ->
// completed, same and different fingerprint, ownership of complete, release and
// extend, 503/504 never completed, and the record's 24 h TTL to the millisecond.
func TestHarnessIdempotencyStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	rec, lock := idemKeys(t)
	ownerA, ownerB := scripttest.Nonce(t), scripttest.Nonce(t)
	reserve := func(fp, owner string) vm1.IdemReserveResult {
		t.Helper()
		r, err := scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fp, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := reserve(fpA, ownerA); r.State != vm1.IdemStateReserved || r.Version != 1 {
		t.Fatalf("first: %+v", r)
	}
	ks := h.Keyspace()
	if ks[rec.String()].TTL != 24*time.Hour || ks[lock.String()].TTL != 30*time.Second || ks[lock.String()].String != ownerA {
		t.Fatalf("after reserve: %+v %+v", ks[rec.String()], ks[lock.String()])
	}
	if r := reserve(fpA, ownerB); r.State != vm1.IdemStateInProgress || r.Response != nil {
		t.Fatalf("same fingerprint while in progress: %+v", r)
	}
	if r := reserve(fpB, ownerB); r.State != vm1.IdemStateConflict {
		t.Fatalf("another fingerprint: %+v", r)
	}

	// A non-owner can neither complete, release nor extend.
	args := vm1.IdemCompleteArgs{Owner: ownerB, Fingerprint: fpA, Status: 201, Response: []byte{0x95}, ResourceID: uuid.NewString()}
	if _, err := scripts.IdemComplete(ctx, rec, lock, args); !errors.Is(err, vm1.ErrNotOwner) {
		t.Fatalf("complete by a non-owner: %v", err)
	}
	if ok, err := scripts.IdemRelease(ctx, rec, lock, vm1.IdemReleaseArgs{Owner: ownerB}); err != nil || ok {
		t.Fatalf("release by a non-owner: %v %v", ok, err)
	}
	if ok, err := scripts.IdemExtend(ctx, lock, vm1.IdemExtendArgs{Owner: ownerB}); err != nil || ok {
		t.Fatalf("extend by a non-owner: %v %v", ok, err)
	}
	// 503 and 504 are never recorded as completed.
	for _, status := range []int64{503, 504} {
		a := args
		a.Owner, a.Status = ownerA, status
		if _, err := scripts.IdemComplete(ctx, rec, lock, a); !errors.Is(err, vm1.ErrTransient) {
			t.Fatalf("complete with %d: %v", status, err)
		}
	}
	// The owner completes with another fingerprint: refused.
	a := args
	a.Owner, a.Fingerprint = ownerA, fpB
	if _, err := scripts.IdemComplete(ctx, rec, lock, a); !errors.Is(err, vm1.ErrConflict) {
		t.Fatalf("complete with another fingerprint: %v", err)
	}
	if got := h.Keyspace()[rec.String()].Hash["state"]; got != "in_progress" {
		t.Fatalf("after refused completions the record is %s", got)
	}

	h.Clock().Advance(time.Second)
	args.Owner = ownerA
	v, err := scripts.IdemComplete(ctx, rec, lock, args)
	if err != nil || v != 2 {
		t.Fatalf("complete by the owner: %v %v", v, err)
	}
	ks = h.Keyspace()
	if _, ok := ks[lock.String()]; ok {
		t.Fatal("the lock outlived the completion")
	}
	if ks[rec.String()].TTL != 24*time.Hour {
		t.Fatalf("completed record TTL %v, want 24h", ks[rec.String()].TTL)
	}
	r := reserve(fpA, scripttest.Nonce(t))
	if r.State != vm1.IdemStateCompleted || r.Status != 201 || !bytes.Equal(r.Response, args.Response) || r.ResourceID != args.ResourceID || r.Version != 2 {
		t.Fatalf("retry: %+v", r)
	}
	if r := reserve(fpB, scripttest.Nonce(t)); r.State != vm1.IdemStateConflict || r.Response != nil {
		t.Fatalf("another fingerprint after completion: %+v", r)
	}
	// The record lives exactly 24 h after its completion.
	h.Clock().Advance(24 * time.Hour)
	if _, ok := h.Keyspace()[rec.String()]; !ok {
		t.Fatal("the record vanished before 24 h")
	}
	h.Clock().Advance(time.Millisecond)
	if _, ok := h.Keyspace()[rec.String()]; ok {
		t.Fatal("the record outlived 24 h")
	}
}

// Lock expiry with a late owner: the heartbeat keeps the lock; once it lapses
// another request takes over (version + 1), and the late owner can neither
// complete, release nor extend, nor disturb the new owner.
func TestHarnessIdempotencyLockExpiryAndLateOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	rec, lock := idemKeys(t)
	late, next := scripttest.Nonce(t), scripttest.Nonce(t)
	if r, err := scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: late}); err != nil || r.State != vm1.IdemStateReserved {
		t.Fatalf("reserve: %+v %v", r, err)
	}
	h.Clock().Advance(20 * time.Second)
	if ok, err := scripts.IdemExtend(ctx, lock, vm1.IdemExtendArgs{Owner: late}); err != nil || !ok {
		t.Fatalf("heartbeat: %v %v", ok, err)
	}
	if ttl := h.Keyspace()[lock.String()].TTL; ttl != 30*time.Second {
		t.Fatalf("lock TTL after the heartbeat: %v", ttl)
	}
	h.Clock().Advance(30 * time.Second) // the lock's expiry: still held
	if r, _ := scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: next}); r.State != vm1.IdemStateInProgress {
		t.Fatalf("at the lock's expiry: %+v", r)
	}
	h.Clock().Advance(time.Millisecond)
	r, err := scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: next})
	if err != nil || r.State != vm1.IdemStateReserved || r.Version != 2 {
		t.Fatalf("takeover: %+v %v", r, err)
	}
	args := vm1.IdemCompleteArgs{Owner: late, Fingerprint: fpA, Status: 200, Response: []byte{0x90}}
	if _, err := scripts.IdemComplete(ctx, rec, lock, args); !errors.Is(err, vm1.ErrNotOwner) {
		t.Fatalf("late complete: %v", err)
	}
	if ok, _ := scripts.IdemExtend(ctx, lock, vm1.IdemExtendArgs{Owner: late}); ok {
		t.Fatal("late extend succeeded")
	}
	if ok, _ := scripts.IdemRelease(ctx, rec, lock, vm1.IdemReleaseArgs{Owner: late}); ok {
		t.Fatal("late release succeeded")
	}
	ks := h.Keyspace()
	if ks[lock.String()].String != next || ks[rec.String()].Hash["state"] != "in_progress" {
		t.Fatalf("the late owner disturbed the new one: %+v %+v", ks[lock.String()], ks[rec.String()])
	}
	args.Owner = next
	if v, err := scripts.IdemComplete(ctx, rec, lock, args); err != nil || v != 3 {
		t.Fatalf("the new owner completes: %v %v", v, err)
	}
}

// A record lost while its owner's lock lives (eviction of the record alone)
// answers in progress and creates nothing; release drops an in-progress record
// so a retry runs again, but never a completed one.
func TestHarnessIdempotencyLostRecordAndRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	rec, lock := idemKeys(t)
	owner := scripttest.Nonce(t)
	if _, err := scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: owner}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Do("DEL", rec.String()); err != nil {
		t.Fatal(err)
	}
	r, err := scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpB, Owner: scripttest.Nonce(t)})
	if err != nil || r.State != vm1.IdemStateInProgress {
		t.Fatalf("record lost, lock alive: %+v %v", r, err)
	}
	if _, ok := h.Keyspace()[rec.String()]; ok {
		t.Fatal("the in-progress answer created a record")
	}
	if ok, err := scripts.IdemRelease(ctx, rec, lock, vm1.IdemReleaseArgs{Owner: owner}); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if len(h.Keyspace()) != 0 {
		t.Fatalf("after release: %v", h.Keyspace())
	}
	// Reserve, complete, then a release by the old owner keeps the completed record.
	r, _ = scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: owner})
	if r.State != vm1.IdemStateReserved || r.Version != 1 {
		t.Fatalf("a retry after release: %+v", r)
	}
	if _, err := scripts.IdemComplete(ctx, rec, lock, vm1.IdemCompleteArgs{Owner: owner, Fingerprint: fpA, Status: 200, Response: []byte{0x90}}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := scripts.IdemRelease(ctx, rec, lock, vm1.IdemReleaseArgs{Owner: owner}); ok {
		t.Fatal("release after completion succeeded")
	}
	if h.Keyspace()[rec.String()].Hash["state"] != "completed" {
		t.Fatal("release dropped a completed record")
	}
}

// idem_warm writes the durable row's completed record with the TTL it is given,
// overwriting any other state, and drops only the caller's own lock.
func TestHarnessIdempotencyWarm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	rec, lock := idemKeys(t)
	other, mine := scripttest.Nonce(t), scripttest.Nonce(t)
	warm := func(owner string, ttl time.Duration) bool {
		t.Helper()
		replaced, err := scripts.IdemWarm(ctx, rec, lock, vm1.IdemWarmArgs{
			Owner: owner, Fingerprint: fpA, Status: 201, Response: []byte{0x95, 1}, ResourceID: "r", Version: 7, TTL: ttl,
		})
		if err != nil {
			t.Fatal(err)
		}
		return replaced
	}
	// Another request's reservation (record in progress, its lock).
	if _, err := scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: other}); err != nil {
		t.Fatal(err)
	}
	if !warm(mine, 5*time.Hour) {
		t.Fatal("warm over an in-progress record reported no record")
	}
	ks := h.Keyspace()
	want := map[string]string{"state": "completed", "fingerprint": fpA, "status": "201", "response": "\x95\x01", "resource_id": "r", "version": "7"}
	if diff := cmp.Diff(want, ks[rec.String()].Hash); diff != "" || ks[rec.String()].TTL != 5*time.Hour {
		t.Fatalf("warmed record (TTL %v): %s", ks[rec.String()].TTL, diff)
	}
	if ks[lock.String()].String != other {
		t.Fatal("warm dropped another owner's lock")
	}
	warm(other, time.Hour)
	if _, ok := h.Keyspace()[lock.String()]; ok {
		t.Fatal("warm kept the caller's own lock")
	}
	if _, err := h.Do("DEL", rec.String()); err != nil {
		t.Fatal(err)
	}
	if warm(mine, time.Minute) {
		t.Fatal("warm into an empty keyspace reported a record")
	}
}

// Values crossing Redis are size-limited: the wrappers refuse an oversize
// response or resource id, and a TTL beyond 24 h, before Redis and naming the
// argument, never the value.
func TestIdempotencyWrappersRefuseOversizeValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, scripts := scripttest.VM1Harness(t)
	rec, lock := idemKeys(t)
	big := bytes.Repeat([]byte{'x'}, vm1.APIIdemMaxBytes+1)
	_, err := scripts.IdemComplete(ctx, rec, lock, vm1.IdemCompleteArgs{Owner: scripttest.Nonce(t), Fingerprint: fpA, Status: 200, Response: big})
	if !errors.Is(err, runtime.ErrInvalidArg) || !strings.Contains(err.Error(), "response") || strings.Contains(err.Error(), "xxx") {
		t.Fatalf("oversize response: %v", err)
	}
	_, err = scripts.IdemComplete(ctx, rec, lock, vm1.IdemCompleteArgs{Owner: scripttest.Nonce(t), Fingerprint: fpA, Status: 200, ResourceID: strings.Repeat("r", 129)})
	if !errors.Is(err, runtime.ErrInvalidArg) || !strings.Contains(err.Error(), "resource_id") {
		t.Fatalf("oversize resource id: %v", err)
	}
	_, err = scripts.IdemWarm(ctx, rec, lock, vm1.IdemWarmArgs{Owner: scripttest.Nonce(t), Fingerprint: fpA, Status: 200, Version: 1, TTL: 25 * time.Hour})
	if !errors.Is(err, runtime.ErrInvalidArg) || !strings.Contains(err.Error(), "ttl") {
		t.Fatalf("warm beyond 24h: %v", err)
	}
	_, err = scripts.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: "A" + fpA[1:], Owner: scripttest.Nonce(t)})
	if !errors.Is(err, runtime.ErrInvalidArg) || !strings.Contains(err.Error(), "fingerprint") {
		t.Fatalf("upper-case fingerprint: %v", err)
	}
	if len(h.Keyspace()) != 0 {
		t.Fatal("a refused call wrote")
	}
}

// The idempotency scripts give equal replies and an equal keyspace on the
// harness and on real Redis (RESP2 and RESP3).
func TestConformanceIdempotency(t *testing.T) {
	t.Parallel()
	forEachProtocol(t, func(t *testing.T, ctx context.Context, real *redis.Client, realScripts *vm1.Scripts, h *luatest.Server, harnessScripts *vm1.Scripts) {
		done, doneLock := idemKeys(t)
		rec, lock := idemKeys(t)
		a, b := scripttest.Nonce(t), scripttest.Nonce(t)
		resp := []byte{0x95, 0x01, 0xcc, 0xc9, 0xa0, 0xa0, 0x90}
		steps := []struct {
			name string
			run  func(*vm1.Scripts) (any, error)
		}{
			{"reserve", func(s *vm1.Scripts) (any, error) {
				return s.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: a})
			}},
			{"reserve in progress", func(s *vm1.Scripts) (any, error) {
				return s.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: b})
			}},
			{"reserve conflict", func(s *vm1.Scripts) (any, error) {
				return s.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpB, Owner: b})
			}},
			{"complete by non-owner", func(s *vm1.Scripts) (any, error) {
				return s.IdemComplete(ctx, rec, lock, vm1.IdemCompleteArgs{Owner: b, Fingerprint: fpA, Status: 201, Response: resp})
			}},
			{"complete 503", func(s *vm1.Scripts) (any, error) {
				return s.IdemComplete(ctx, rec, lock, vm1.IdemCompleteArgs{Owner: a, Fingerprint: fpA, Status: 503, Response: resp})
			}},
			{"extend", func(s *vm1.Scripts) (any, error) { return s.IdemExtend(ctx, lock, vm1.IdemExtendArgs{Owner: a}) }},
			{"extend by non-owner", func(s *vm1.Scripts) (any, error) { return s.IdemExtend(ctx, lock, vm1.IdemExtendArgs{Owner: b}) }},
			{"complete", func(s *vm1.Scripts) (any, error) {
				return s.IdemComplete(ctx, rec, lock, vm1.IdemCompleteArgs{Owner: a, Fingerprint: fpA, Status: 201, Response: resp, ResourceID: "6f1d3c6e-9a57-4c57-8d0a-6b0e3f1b2c3d"})
			}},
			{"reserve completed", func(s *vm1.Scripts) (any, error) {
				return s.IdemReserve(ctx, rec, lock, vm1.IdemReserveArgs{Fingerprint: fpA, Owner: b})
			}},
			{"release completed", func(s *vm1.Scripts) (any, error) {
				return s.IdemRelease(ctx, rec, lock, vm1.IdemReleaseArgs{Owner: a})
			}},
			{"warm a lost record", func(s *vm1.Scripts) (any, error) {
				return s.IdemWarm(ctx, done, doneLock, vm1.IdemWarmArgs{Owner: b, Fingerprint: fpB, Status: 422, Response: resp, Version: 3, TTL: time.Hour})
			}},
		}
		var lag scripttest.Lag
		for _, st := range steps {
			lag.Sync(t, h, real)
			want, wantErr := st.run(realScripts)
			lag.Step()
			got, gotErr := st.run(harnessScripts)
			if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
				t.Fatalf("%s: error on Redis %v, on the harness %v", st.name, wantErr, gotErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: Redis (-) vs harness (+):\n%s", st.name, diff)
			}
		}
		scripttest.CompareKeyspaces(t, ctx, real, h, nil, lag.Max())
		scripttest.AuditTTLs(t, real, vm1.Keys)
	})
}
