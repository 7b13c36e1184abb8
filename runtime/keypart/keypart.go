// Package keypart holds the value formats of key and channel placeholders and of
// script arguments, shared by the generator (which checks the spec) and the runtime
// (which checks what callers pass). No accepted value can contain a separator (':'),
// a glob character ('*', '?', '[', ']'), a hash tag brace ('{', '}') or whitespace,
// so a value can never forge another key.
package keypart

import (
	"crypto/sha256"
	"encoding/hex"
)

// UUID reports whether s is a canonical lower-case UUID (8-4-4-4-12).
func UUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isLowerHex(c) {
				return false
			}
		}
	}
	return true
}

// Hex reports whether s is exactly n lower-case hex characters.
func Hex(s string, n int) bool { return len(s) == n && every(s, isLowerHex) }

// Name reports whether s is 1..maxLen characters of [A-Za-z0-9._-].
func Name(s string, maxLen int) bool {
	return len(s) >= 1 && len(s) <= maxLen && every(s, isNameByte)
}

// Path reports whether s is 1..maxLen characters of ':'-separated segments,
// each one or more of [A-Za-z0-9._-] ("user:42:login"): a name that may hold
// ':', never a glob character, a brace (a hash tag), a space or an empty
// segment.
func Path(s string, maxLen int) bool {
	if len(s) < 1 || len(s) > maxLen || s[0] == ':' || s[len(s)-1] == ':' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ':' {
			if s[i-1] == ':' {
				return false
			}
			continue
		}
		if !isNameByte(c) {
			return false
		}
	}
	return true
}

// Token reports whether s is a random token (owner token, nonce): 16..128
// characters of [A-Za-z0-9_-], the alphabet of unpadded URL-safe base64.
func Token(s string) bool {
	return len(s) >= TokenMinLen && len(s) <= TokenMaxLen && every(s, isTokenByte)
}

// Token length bounds.
const (
	TokenMinLen = 16
	TokenMaxLen = 128
)

// SHA256 is the lower-case hex SHA-256 of s: how a sha256 placeholder stores a value.
func SHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// EnumHash is how an enum value with sha256 encoding appears in a key: the first 16
// hex characters of its SHA-256, so no label text is in the key.
func EnumHash(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:8])
}

// every reports whether ok holds for every byte of s.
func every(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }
func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isNameByte(c byte) bool  { return isAlnum(c) || c == '.' || c == '_' || c == '-' }
func isTokenByte(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }
