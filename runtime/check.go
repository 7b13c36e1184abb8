package runtime

import (
	"fmt"
	"strconv"
	"time"

	"github.com/hanchat/luagen/runtime/keypart"
)

// The Check* functions validate one key or channel part for a generated builder.
// Their errors name the key and the part, never the value.

// CheckUUID requires a canonical lower-case UUID.
func CheckUUID(key, part, v string) error {
	if !keypart.UUID(v) {
		return &KeyPartError{Key: key, Part: part, Reason: "want a canonical lower-case UUID"}
	}
	return nil
}

// CheckHex requires exactly n lower-case hex characters.
func CheckHex(key, part, v string, n int) error {
	if !keypart.Hex(v, n) {
		return &KeyPartError{Key: key, Part: part, Reason: fmt.Sprintf("want %d lower-case hex characters (got %d characters)", n, len(v))}
	}
	return nil
}

// CheckName requires 1..maxLen characters of [A-Za-z0-9._-].
func CheckName(key, part, v string, maxLen int) error {
	if !keypart.Name(v, maxLen) {
		return &KeyPartError{Key: key, Part: part, Reason: fmt.Sprintf("want 1..%d characters of [A-Za-z0-9._-] (got %d characters)", maxLen, len(v))}
	}
	return nil
}

// CheckPath requires 1..maxLen characters of ':'-separated segments of
// [A-Za-z0-9._-], none empty (a path placeholder: "user:42:login").
func CheckPath(key, part, v string, maxLen int) error {
	if !keypart.Path(v, maxLen) {
		return &KeyPartError{Key: key, Part: part, Reason: fmt.Sprintf("want 1..%d characters of ':'-separated segments of [A-Za-z0-9._-], none empty (got %d characters)", maxLen, len(v))}
	}
	return nil
}

// CheckInt requires min <= v <= max.
func CheckInt(key, part string, v, min, max int64) error {
	if v < min || v > max {
		return &KeyPartError{Key: key, Part: part, Reason: fmt.Sprintf("want %d..%d", min, max)}
	}
	return nil
}

// HMAC is the lower-case hex HMAC-SHA256 of a user-controlled value (an IP address,
// an Idempotency-Key), the form such a value takes inside a key. Generated key
// builders take it for placeholders of type hmac; a service makes it with a
// secret of its own (services/secrets.HMACKey.Sum).
type HMAC string

// CheckHMAC requires a 64-digit lower-case hex HMAC-SHA256 digest.
func CheckHMAC(key, part string, v HMAC) error {
	if !keypart.Hex(string(v), 64) {
		return &KeyPartError{Key: key, Part: part, Reason: "want a lower-case hex HMAC-SHA256 (64 digits) made with the service's secret"}
	}
	return nil
}

// EnumPartError is the error of a builder given a value outside its enum.
func EnumPartError(key, part string) error {
	return &KeyPartError{Key: key, Part: part, Reason: "not a declared value of its enum"}
}

// The Arg* functions validate one script argument for a generated wrapper and
// return it encoded for ARGV. Their errors name the script and the argument.

// ArgInt checks min <= v <= max.
func ArgInt(script, arg string, v, min, max int64) (any, error) {
	if v < min || v > max {
		return nil, &ArgError{Script: script, Arg: arg, Reason: fmt.Sprintf("want %d..%d", min, max)}
	}
	return v, nil
}

// ArgBool encodes a boolean as 1 or 0.
func ArgBool(v bool) any {
	if v {
		return int64(1)
	}
	return int64(0)
}

// ArgDuration checks min <= d <= max and encodes d in whole milliseconds
// (truncating any fraction of a millisecond).
func ArgDuration(script, arg string, d, min, max time.Duration) (any, error) {
	if d < min || d > max {
		return nil, &ArgError{Script: script, Arg: arg, Reason: fmt.Sprintf("want %s..%s", min, max)}
	}
	return d.Milliseconds(), nil
}

// ArgString checks the length of a string argument.
func ArgString(script, arg, v string, maxBytes int) (any, error) {
	if len(v) > maxBytes {
		return nil, &ArgError{Script: script, Arg: arg, Reason: fmt.Sprintf("%d bytes, the limit is %d", len(v), maxBytes)}
	}
	return v, nil
}

// ArgBytes checks the length of a bytes argument.
func ArgBytes(script, arg string, v []byte, maxBytes int) (any, error) {
	if len(v) > maxBytes {
		return nil, &ArgError{Script: script, Arg: arg, Reason: fmt.Sprintf("%d bytes, the limit is %d", len(v), maxBytes)}
	}
	return v, nil
}

// ArgToken checks a random token (owner token, nonce).
func ArgToken(script, arg, v string) (any, error) {
	if !keypart.Token(v) {
		return nil, &ArgError{Script: script, Arg: arg, Reason: "want " + strconv.Itoa(keypart.TokenMinLen) + ".." + strconv.Itoa(keypart.TokenMaxLen) + " characters of [A-Za-z0-9_-]"}
	}
	return v, nil
}

// ArgHex checks exactly n lower-case hex characters.
func ArgHex(script, arg, v string, n int) (any, error) {
	if !keypart.Hex(v, n) {
		return nil, &ArgError{Script: script, Arg: arg, Reason: fmt.Sprintf("want %d lower-case hex characters", n)}
	}
	return v, nil
}

// ArgUUID checks a canonical lower-case UUID.
func ArgUUID(script, arg, v string) (any, error) {
	if !keypart.UUID(v) {
		return nil, &ArgError{Script: script, Arg: arg, Reason: "want a canonical lower-case UUID"}
	}
	return v, nil
}

// ArgName checks 1..maxLen characters of [A-Za-z0-9._-].
func ArgName(script, arg, v string, maxLen int) (any, error) {
	if !keypart.Name(v, maxLen) {
		return nil, &ArgError{Script: script, Arg: arg, Reason: fmt.Sprintf("want 1..%d characters of [A-Za-z0-9._-]", maxLen)}
	}
	return v, nil
}

// MissingKey is the error of a wrapper given no key for a KEYS position: nil, a
// zero value, or a value that is not one of the position's key types (a pointer,
// another type embedding one).
func MissingKey(script, position string) error {
	return &ArgError{Script: script, Arg: "KEYS " + position, Reason: "no key of a type this position takes (build it with its key builder)"}
}
