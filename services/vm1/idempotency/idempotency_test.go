package idempotency

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/prometheus/client_golang/prometheus"
)

func TestFingerprintSeparatesParts(t *testing.T) {
	a := Fingerprint([]byte("ab"), []byte("c"))
	if a == Fingerprint([]byte("a"), []byte("bc")) || a == Fingerprint([]byte("abc")) {
		t.Fatal("different parts, same fingerprint")
	}
	if a != Fingerprint([]byte("ab"), []byte("c")) || len(a) != 64 {
		t.Fatalf("fingerprint %q: want a stable 64-character hex digest", a)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	scripts, _ := vm1.NewScripts(vm1.Clients{})
	key, _ := secrets.NewHMACKey([]byte("idempotency test secret of 32 bytes or more"))
	store := NewStore(nil)
	for name, f := range map[string]func() (*Keeper, error){
		"no store":    func() (*Keeper, error) { return New(scripts, nil, key, Options{}) },
		"zero key":    func() (*Keeper, error) { return New(scripts, store, secrets.HMACKey{}, Options{}) },
		"short lease": func() (*Keeper, error) { return New(scripts, store, key, Options{Lease: time.Millisecond}) },
		"long lease":  func() (*Keeper, error) { return New(scripts, store, key, Options{Lease: time.Minute}) },
	} {
		if _, err := f(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A second Keeper on one registry shares its collectors: the two count together.
	reg := prometheus.NewRegistry()
	first, err := New(scripts, store, key, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	second, err := New(scripts, store, key, Options{Registerer: reg})
	if err != nil {
		t.Fatalf("a second Keeper on one registry: %v", err)
	}
	if second.metrics.outcomes != first.metrics.outcomes || second.metrics.redisErrors != first.metrics.redisErrors {
		t.Error("the second Keeper registered collectors of its own")
	}
	// Without scripts, a call fails with runtime.ErrNoClient (and, Redis being
	// unusable, fails closed), never a panic.
	k, err := New(nil, store, key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Scope: vm1.IdemScopeMessageSend, UserID: "0b9a3f0e-4c3e-4f7e-9a51-6f0b8f1f2a01", Key: "client-key-1", Fingerprint: Fingerprint([]byte("x"))}
	if _, err := k.Do(context.Background(), req, nil); !errors.Is(err, runtime.ErrNoClient) {
		t.Errorf("nil scripts: %v, want ErrNoClient", err)
	}
}

func TestStatusCode(t *testing.T) {
	for err, want := range map[error]int{
		nil:                                200,
		fmt.Errorf("x: %w", ErrConflict):   422,
		fmt.Errorf("x: %w", ErrInProgress): 409,
		fmt.Errorf("x: %w: %w", ErrUnavailable, errors.New("refused")): 503,
		fmt.Errorf("x: %w", ErrInvalidRequest):                         400,
		fmt.Errorf("x: %w", ErrLeaseLost):                              500,
	} {
		if got := StatusCode(err); got != want {
			t.Errorf("StatusCode(%v) = %d, want %d", err, got, want)
		}
	}
}
