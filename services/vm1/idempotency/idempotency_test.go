package idempotency

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/runtime"
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

func TestNewRefusesBadConfig(t *testing.T) {
	scripts, _ := vm1.NewScripts(vm1.Clients{})
	key, _ := runtime.NewHMACKey([]byte("idempotency test secret of 32 bytes or more"))
	store := NewStore(nil)
	for name, cfg := range map[string]Config{
		"no scripts":  {Store: store, KeyHMAC: key},
		"no store":    {Scripts: scripts, KeyHMAC: key},
		"zero key":    {Scripts: scripts, Store: store},
		"short lease": {Scripts: scripts, Store: store, KeyHMAC: key, Lease: time.Millisecond},
		"long lease":  {Scripts: scripts, Store: store, KeyHMAC: key, Lease: time.Minute},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(Config{Scripts: scripts, Store: store, KeyHMAC: key}); err != nil {
		t.Fatal(err)
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
