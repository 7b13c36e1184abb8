// Package secrets keeps a service's secrets out of keys, logs and errors: HMACKey
// hashes user-controlled values (client addresses, Idempotency-Keys) into the
// runtime.HMAC digests that generated key builders take, and RedactURL makes a
// Redis URL fit for a log line.
package secrets

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"

	"github.com/hanchat/luagen/runtime"
)

// ErrWeakSecret: an HMAC secret shorter than 32 bytes.
var ErrWeakSecret = errors.New("HMAC secret shorter than 32 bytes")

// HMACKey hashes user-controlled values with a secret from the service's config.
// It never prints its secret.
type HMACKey struct {
	secret []byte
}

// NewHMACKey copies secret, which must be at least 32 bytes.
func NewHMACKey(secret []byte) (HMACKey, error) {
	if len(secret) < 32 {
		return HMACKey{}, ErrWeakSecret
	}
	return HMACKey{secret: append([]byte(nil), secret...)}, nil
}

// Sum is the lower-case hex HMAC-SHA256 of v. The zero HMACKey hashes nothing:
// its Sum is "", which every key builder refuses, so a forgotten secret fails
// closed instead of hashing with an empty (guessable) one.
func (k HMACKey) Sum(v string) runtime.HMAC {
	if k.IsZero() {
		return ""
	}
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(v))
	return runtime.HMAC(hex.EncodeToString(m.Sum(nil)))
}

// IsZero reports whether the key was never made by NewHMACKey.
func (k HMACKey) IsZero() bool { return len(k.secret) == 0 }

// String hides the secret.
func (k HMACKey) String() string { return "HMACKey(redacted)" }

// GoString hides the secret from %#v.
func (k HMACKey) GoString() string { return "secrets.HMACKey{redacted}" }

// RedactURL returns a Redis URL fit for a log line or an error: the password, if
// any, is replaced. A string that does not parse is replaced whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable redis URL>"
	}
	return u.Redacted()
}
