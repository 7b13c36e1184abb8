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

// ParseRedisURL refuses what redis.ParseURL turns silently into something
// else (issue 21): a URL without "//" after the scheme ("redis:u:PW@h" became
// localhost:6379 with no password), one with no host (localhost again), and
// skip_verify=true on rediss://, which turns off the TLS certificate check,
// unless AllowSkipVerify says so (tests against a self-signed certificate).
// No error shows any part of the URL but what RedactURL keeps.
func TestParseRedisURLRefusesSilentFallbacks(t *testing.T) {
	for _, c := range []struct {
		raw, why string
	}{
		{"redis:u:Hunter2pw@redis.example:6379", "no '//' after the scheme"},
		{"redis:Hunter2pw@redis.example:6379/0", "no '//' after the scheme"},
		{"rediss:u:Hunter2pw@redis.example:6380", "no '//' after the scheme"},
		{"redis:/u:Hunter2pw@redis.example:6379", "no '//' after the scheme"},
		{"unix:/run/redis.sock?password=Hunter2pw", "no '//' after the scheme"},
		{"redis://:Hunter2pw@/0", "no host"},
		{"redis://u:Hunter2pw@:6379/0", "no host"},
		{"rediss://u:Hunter2pw@redis.example:6380/0?skip_verify=true", "skip_verify"},
		{"rediss://u:Hunter2pw@redis.example:6380/0?skip_verify=1", "skip_verify"},
		{"rediss://u:Hunter2pw@redis.example:6380/0?dial_timeout=1s&skip_verify=TRUE", "skip_verify"},
	} {
		o, err := secrets.ParseRedisURL("REDIS_URL", c.raw)
		if err == nil {
			t.Errorf("%q: accepted as addr %s, user %q, password set %v, TLS %v", c.raw, o.Addr, o.Username, o.Password != "", o.TLSConfig != nil)
			continue
		}
		if !errors.Is(err, secrets.ErrBadURL) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "REDIS_URL=") {
			t.Errorf("%q: %v, want ErrBadURL naming REDIS_URL and saying %q", c.raw, err, c.why)
		}
		if strings.Contains(err.Error(), "Hunter2pw") || strings.Contains(err.Error(), "redis.example") && !strings.Contains(secrets.RedactURL(c.raw), "redis.example") {
			t.Errorf("%q: the error shows more than RedactURL keeps: %v", c.raw, err)
		}
	}
	// Allowed explicitly, for tests: TLS without the certificate check.
	o, err := secrets.ParseRedisURL("REDIS_URL", "rediss://u:pw@127.0.0.1:6380/0?skip_verify=true", secrets.AllowSkipVerify())
	if err != nil || o.TLSConfig == nil || !o.TLSConfig.InsecureSkipVerify {
		t.Fatalf("AllowSkipVerify: %+v %v", o, err)
	}
	// What stays accepted.
	for _, raw := range []string{"redis://u:pw@10.0.0.5:6379/1", "rediss://u:pw@redis.example:6380/0", "redis://localhost", "unix:///run/redis.sock?db=2"} {
		if _, err := secrets.ParseRedisURL("REDIS_URL", raw); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
}
