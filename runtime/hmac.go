package runtime

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
)

// ErrWeakSecret: an HMAC secret shorter than 32 bytes.
var ErrWeakSecret = errors.New("HMAC secret shorter than 32 bytes")

// HMAC is the lower-case hex HMAC-SHA256 of a user-controlled value (an IP address,
// an Idempotency-Key), the form such a value takes inside a key.
type HMAC string

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

// Sum is the HMAC-SHA256 of v. The zero HMACKey hashes nothing: its Sum is "",
// which every key builder refuses, so a forgotten secret fails closed instead of
// hashing with an empty (guessable) one.
func (k HMACKey) Sum(v string) HMAC {
	if k.IsZero() {
		return ""
	}
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(v))
	return HMAC(hex.EncodeToString(m.Sum(nil)))
}

// IsZero reports whether the key was never made by NewHMACKey.
func (k HMACKey) IsZero() bool { return len(k.secret) == 0 }

// String hides the secret.
func (k HMACKey) String() string { return "HMACKey(redacted)" }

// GoString hides the secret from %#v.
func (k HMACKey) GoString() string { return "runtime.HMACKey{redacted}" }

// RedactURL returns a Redis URL fit for a log line or an error: the password, if
// any, is replaced. A string that does not parse is replaced whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable redis URL>"
	}
	return u.Redacted()
}
