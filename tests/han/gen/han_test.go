package gen_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
)

// HAN's idempotency scripts tie their record and lock with shared_placeholders:
// the generated wrapper refuses one request's record with another request's lock
// (another user's, another scope's, another key's) before Redis is called, and
// takes a matching pair.
func TestHANIdempotencyKeysAreTied(t *testing.T) {
	ctx := context.Background()
	srv := luatest.NewServer(luatest.NewClock(time.Unix(1_700_000_000, 0)))
	sc := srv.Scripter()
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: sc})
	if err != nil {
		t.Fatal(err)
	}
	hk, err := secrets.NewHMACKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := "0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", "1c8b2e51-7b6a-4f8f-8d62-7b1c8f4b0f32"
	rec, _ := vm1.NewAPIIdemKey(vm1.IdemScopeMessageSend, alice, hk.Sum("k1"))
	for name, c := range map[string]struct {
		lock vm1.APIIdemLockKey
		want string
	}{
		"another user":  {must(vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, bob, hk.Sum("k1"))), "{user_id}"},
		"another scope": {must(vm1.NewAPIIdemLockKey(vm1.IdemScopeDialogCreate, alice, hk.Sum("k1"))), "{scope}"},
		"another key":   {must(vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, alice, hk.Sum("k2"))), "{key_hmac}"},
	} {
		_, err := scripts.IdemRelease(ctx, rec, c.lock, vm1.IdemReleaseArgs{Owner: "owner-aaaaaaaaaaaaaaaa"})
		if !errors.Is(err, runtime.ErrInvalidArg) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal naming %s", name, err, c.want)
		}
	}
	if n := len(sc.Results()); n != 0 {
		t.Fatalf("%d scripts ran for refused keys", n)
	}
	lock := must(vm1.NewAPIIdemLockKey(vm1.IdemScopeMessageSend, alice, hk.Sum("k1")))
	if released, err := scripts.IdemRelease(ctx, rec, lock, vm1.IdemReleaseArgs{Owner: "owner-aaaaaaaaaaaaaaaa"}); err != nil || released {
		t.Fatalf("a matching pair: %v %v", released, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
