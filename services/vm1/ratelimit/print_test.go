package ratelimit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/services/secrets"
)

// A Limiter printed with any verb shows no byte of its HMAC secret (issue 12:
// fmt.Printf("%+v", limiter) printed them).
func TestLimiterPrintsNoSecret(t *testing.T) {
	secret := []byte("Hunter2pw ratelimit secret, at least 32 bytes")
	key, err := secrets.NewHMACKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(nil, one(FixedWindow, ScopeIP, 2, time.Minute), Options{IPKey: key})
	if err != nil {
		t.Fatal(err)
	}
	decimal := strings.Trim(fmt.Sprint(secret[:8]), "[]")
	for _, s := range []string{fmt.Sprintf("%v", l), fmt.Sprintf("%+v", l), fmt.Sprintf("%#v", l), fmt.Sprintf("%+v", Options{IPKey: key})} {
		if strings.Contains(s, "Hunter2pw") || strings.Contains(s, decimal) {
			t.Fatalf("printed the secret: %s", s)
		}
	}
}
