package runtime

import (
	"fmt"

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
// secret of its own (HMAC-SHA256 of the value under a key only the service holds).
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
