// Package secrets keeps a service's secrets out of keys, logs and errors: HMACKey
// hashes user-controlled values (client addresses, Idempotency-Keys) into the
// runtime.HMAC digests that generated key builders take, RedactURL makes a
// Redis URL fit for a log line, and ParseRedisURL parses one with an error that
// never quotes it.
package secrets

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"

	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// ErrWeakSecret: an HMAC secret shorter than 32 bytes.
var ErrWeakSecret = errors.New("HMAC secret shorter than 32 bytes")

// HMACKey hashes user-controlled values with a secret from the service's config.
// It never prints its secret: String, GoString and Format show a fixed text,
// and the secret sits behind a pointer, so even a struct that holds an HMACKey
// in an unexported field (where fmt cannot call its methods) prints an address
// under %v, %+v and %#v, never the bytes.
type HMACKey struct {
	k *hmacSecret
}

type hmacSecret struct{ b []byte }

// NewHMACKey copies secret, which must be at least 32 bytes.
func NewHMACKey(secret []byte) (HMACKey, error) {
	if len(secret) < 32 {
		return HMACKey{}, ErrWeakSecret
	}
	return HMACKey{k: &hmacSecret{b: append([]byte(nil), secret...)}}, nil
}

// Sum is the lower-case hex HMAC-SHA256 of v. The zero HMACKey hashes nothing:
// its Sum is "", which every key builder refuses, so a forgotten secret fails
// closed instead of hashing with an empty (guessable) one.
func (k HMACKey) Sum(v string) runtime.HMAC {
	if k.IsZero() {
		return ""
	}
	m := hmac.New(sha256.New, k.k.b)
	m.Write([]byte(v))
	return runtime.HMAC(hex.EncodeToString(m.Sum(nil)))
}

// IsZero reports whether the key was never made by NewHMACKey.
func (k HMACKey) IsZero() bool { return k.k == nil || len(k.k.b) == 0 }

// String hides the secret.
func (k HMACKey) String() string { return "HMACKey(redacted)" }

// GoString hides the secret from %#v.
func (k HMACKey) GoString() string { return "secrets.HMACKey{redacted}" }

// Format hides the secret from every verb (%x, %s, %q, %d, ...).
func (k HMACKey) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		io.WriteString(f, k.GoString())
		return
	}
	io.WriteString(f, k.String())
}

// ErrBadURL: a Redis URL that does not parse. Its error says why in words of
// its own, never with any part of the URL.
var ErrBadURL = errors.New("invalid Redis URL")

// RedactURL returns a Redis URL fit for a log line or an error. It is rebuilt
// from the scheme, the host (with its port) and the path alone; user, password,
// query and fragment never survive. A URL whose parts cannot be told apart
// with certainty (an '@' after a '/', '?' or '#', which an unescaped character
// of a password puts there; a scheme or host with unexpected characters; a path
// other than a database number or a socket path) is replaced by a placeholder
// naming what could be kept, and one that does not parse by
// "<unparsable redis URL>".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable redis URL>"
	}
	if !schemeRe.MatchString(u.Scheme) {
		return "<redis URL of an unknown scheme>"
	}
	if u.Opaque != "" || strings.ContainsRune(afterAuthority(raw), '@') {
		return u.Scheme + "://<redacted>"
	}
	host := u.Host
	if !hostRe.MatchString(host) {
		host = "<redacted host>"
	}
	path := u.EscapedPath()
	if !pathRe.MatchString(path) || (u.Scheme != "unix" && !dbPathRe.MatchString(path)) {
		path = "/<redacted path>"
	}
	return u.Scheme + "://" + host + path
}

var (
	schemeRe = regexp.MustCompile(`^(redis|rediss|unix|valkey|valkeys)$`)
	hostRe   = regexp.MustCompile(`^([A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$`)
	pathRe   = regexp.MustCompile(`^[A-Za-z0-9._/-]*$`)
	dbPathRe = regexp.MustCompile(`^(/[0-9]{0,2})?$`)
)

// afterAuthority is raw from the end of its authority on: what follows
// "scheme://host" (path, query, fragment), or all of raw after the scheme when it
// has no "//". An '@' there means the authority was cut early by a character of a
// password ('/', '?' or '#').
func afterAuthority(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		_, rest, _ = strings.Cut(raw, ":")
		return rest
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return rest[i:]
	}
	return ""
}

// URLOption changes what ParseRedisURL accepts.
type URLOption func(*urlOptions)

type urlOptions struct{ skipVerify bool }

// AllowSkipVerify makes ParseRedisURL accept skip_verify=true on a rediss://
// URL, which turns off the check of the server's TLS certificate: for tests
// against a server with a certificate made on the spot, never in production.
func AllowSkipVerify() URLOption { return func(o *urlOptions) { o.skipVerify = true } }

// ParseRedisURL is redis.ParseURL whose error never carries the URL or any part
// of it: url.Parse's and redis.ParseURL's errors quote the raw text (a '%' in a
// generated password is enough to make one), so they are replaced, not wrapped.
// The error wraps ErrBadURL and names env, the variable the URL came from; the
// URL is shown only through RedactURL.
//
// It refuses what redis.ParseURL would turn silently into something else: a
// URL without "//" after its scheme ("redis:u:pw@host" parses as an opaque URL
// and connects to localhost:6379 without a password), a redis:// or rediss://
// URL with no host (localhost:6379 again), and a skip_verify option (TLS
// without the certificate check) unless AllowSkipVerify is given.
func ParseRedisURL(env, raw string, opts ...URLOption) (*redis.Options, error) {
	var o urlOptions
	for _, f := range opts {
		f(&o)
	}
	bad := func(why string) error {
		return fmt.Errorf("%s=%s: %w: %s", env, RedactURL(raw), ErrBadURL, why)
	}
	scheme, rest, _ := strings.Cut(raw, ":")
	if raw != "" && schemeRe.MatchString(scheme) && !strings.HasPrefix(rest, "//") {
		return nil, bad("no '//' after the scheme (write redis://user:password@host:port/db): without it the rest is not read as a host and the client would connect to localhost:6379 without a password")
	}
	if u, err := url.Parse(raw); err == nil {
		if (u.Scheme == "redis" || u.Scheme == "rediss") && u.Hostname() == "" {
			return nil, bad("no host (the client would connect to localhost:6379): name it, redis://localhost:6379 for a local server")
		}
		if _, ok := u.Query()["skip_verify"]; ok && !o.skipVerify {
			return nil, bad("skip_verify turns off the check of the server's TLS certificate: refused (secrets.AllowSkipVerify allows it, for tests only)")
		}
	}
	parsed, err := redis.ParseURL(raw)
	if err == nil {
		return parsed, nil
	}
	why := "it is not a URL redis.ParseURL accepts (redis://, rediss:// or unix://, a database number as the path, known options only)"
	var ue *url.Error
	switch {
	case raw == "":
		why = "it is empty"
	case errors.As(err, &ue):
		var esc url.EscapeError
		var host url.InvalidHostError
		switch {
		case errors.As(ue.Err, &esc):
			why = "a '%' that starts no valid escape (percent-encode '%' in a password as %25)"
		case errors.As(ue.Err, &host):
			why = "an invalid character in its host"
		default:
			why = "it does not parse as a URL (percent-encode '@', ':', '/', '?', '#' and '%' in a password)"
		}
	}
	return nil, bad(why)
}
