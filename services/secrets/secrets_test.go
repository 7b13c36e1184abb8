package secrets_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
)

func TestHMACKeyNeverPrintsItsSecret(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef-secret")
	k, err := secrets.NewHMACKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{k.String(), k.GoString(), fmt.Sprintf("%v %+v %#v", k, k, k)} {
		if strings.Contains(s, "-secret") || strings.Contains(s, "0123") {
			t.Fatalf("printed the secret: %s", s)
		}
	}
	a, b := k.Sum("192.0.2.1"), k.Sum("192.0.2.2")
	if a == b || runtime.CheckHMAC("k", "p", a) != nil {
		t.Fatal("Sum is not a distinct valid digest")
	}
	if runtime.CheckHMAC("k", "p", (secrets.HMACKey{}).Sum("192.0.2.1")) == nil {
		t.Fatal("the zero key's digest passes a key builder: a forgotten secret would hash with an empty one")
	}
	if _, err := secrets.NewHMACKey([]byte("short")); !errors.Is(err, secrets.ErrWeakSecret) {
		t.Fatal("short secret accepted")
	}
}

func TestHMACKeyIsZero(t *testing.T) {
	if !(secrets.HMACKey{}).IsZero() {
		t.Fatal("the zero key is not zero")
	}
	k, _ := secrets.NewHMACKey(make([]byte, 32))
	if k.IsZero() {
		t.Fatal("a made key reads as zero")
	}
}

// NewHMACKey copies the secret: a caller that wipes its buffer afterwards does
// not change the digests.
func TestHMACKeyCopiesItsSecret(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	k, _ := secrets.NewHMACKey(secret)
	before := k.Sum("v")
	clear(secret)
	if k.Sum("v") != before {
		t.Fatal("the key shares the caller's buffer")
	}
}

func TestRedactURL(t *testing.T) {
	got := secrets.RedactURL("redis://api_backend:s3cr3t@redis:6379/1")
	if got != "redis://redis:6379/1" {
		t.Fatalf("RedactURL = %q", got)
	}
	if got := secrets.RedactURL("redis://u:p%zz@h"); strings.Contains(got, "p%zz") {
		t.Fatalf("unparsable URL leaked: %q", got)
	}
}
