package sizing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/keypart"
)

func checkPrefix(p string, maxLen int, reserved []string) error {
	return runtime.CheckPrefix(p, maxLen, reserved...)
}

// partValue is what a placeholder's value v puts in a key, after the checks
// the generated builder makes.
func partValue(prm *keyspec.Param, v string) (string, error) {
	switch prm.Type {
	case keyspec.TypeUUID, keyspec.TypeHex, keyspec.TypeName:
		if err := textValue(prm.Type, v, prm.Len, prm.MaxLen); err != nil {
			return "", err
		}
	case keyspec.TypeInt:
		return intValue(v, prm.Min, prm.Max)
	case keyspec.TypeHMAC:
		if !keypart.Hex(v, 64) {
			return "", fmt.Errorf("%q: want an HMAC-SHA256 digest, 64 lower-case hex characters", v)
		}
	case keyspec.TypePath:
		if !keypart.Path(v, prm.MaxLen) {
			return "", fmt.Errorf("%q: want 1..%d of ':'-separated segments of [A-Za-z0-9._-]", v, prm.MaxLen)
		}
	case keyspec.TypeEnum:
		ok := false
		for _, x := range prm.Enum.Values {
			ok = ok || x == v
		}
		if !ok {
			return "", fmt.Errorf("%q is not a value of enum %s", v, prm.Enum.Name)
		}
		if prm.Encode == keyspec.EncodeSHA256 {
			return keypart.EnumHash(v), nil
		}
	case keyspec.TypeSHA256:
		return keypart.SHA256(v), nil
	default:
		return "", fmt.Errorf("placeholder type %s", prm.Type)
	}
	return v, nil
}

// intValue is v, an integer within [min, max], as decimal text.
func intValue(v string, min, max int64) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min || n > max {
		return "", fmt.Errorf("%q: want an integer in [%d, %d]", v, min, max)
	}
	return strconv.FormatInt(n, 10), nil
}

// textValue refuses v unless it is a value of type typ, one of the types
// placeholders and arguments share (the same names: keyspec.TypeUUID is
// keyspec.ArgUUID): a UUID, a hex string of length n, a name of 1..maxLen
// characters.
func textValue(typ, v string, n, maxLen int) error {
	switch typ {
	case keyspec.TypeUUID:
		if !keypart.UUID(v) {
			return fmt.Errorf("%q is not a canonical lower-case UUID", v)
		}
	case keyspec.TypeHex:
		if !keypart.Hex(v, n) {
			return fmt.Errorf("%q: want %d lower-case hex characters", v, n)
		}
	case keyspec.TypeName:
		if !keypart.Name(v, maxLen) {
			return fmt.Errorf("%q: want 1..%d of [A-Za-z0-9._-]", v, maxLen)
		}
	}
	return nil
}

// randomValue is a random valid value of a placeholder, of a representative
// length: a UUID, hex and HMAC digests of their length, a name of 12
// characters (or its max_len), an int at the bottom of its range (at least
// 0), an enum's first value, a string of 16 characters for a sha256.
func randomValue(prm *keyspec.Param) string {
	switch prm.Type {
	case keyspec.TypeUUID:
		return randomUUID()
	case keyspec.TypeHex:
		return randomHex(prm.Len)
	case keyspec.TypeHMAC:
		return randomHex(64)
	case keyspec.TypeName, keyspec.TypePath:
		return randomText(min(12, prm.MaxLen))
	case keyspec.TypeInt:
		n := prm.Min
		if n < 0 {
			n = min(0, prm.Max)
		}
		return strconv.FormatInt(n, 10)
	case keyspec.TypeEnum:
		return prm.Enum.Values[0]
	default: // sha256: any string
		return randomText(16)
	}
}

// buildKey is the key name of k for the placeholder values, as the generated
// builder writes it.
func buildKey(prefix string, k *keyspec.Key, values map[string]string) (string, error) {
	var b strings.Builder
	b.WriteString(prefix)
	for _, pt := range k.Pattern.Parts {
		if pt.Param == nil {
			b.WriteString(pt.Literal)
			continue
		}
		v, err := partValue(pt.Param, values[pt.Param.Name])
		if err != nil {
			return "", fmt.Errorf("key %s: {%s}: %w", k.Name, pt.Param.Name, err)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// encodeArg is an argument's value as the wrapper sends it, after the checks
// the wrapper makes.
func encodeArg(a *keyspec.Arg, v string) (string, error) {
	switch a.Type {
	case keyspec.ArgInt, keyspec.ArgInt64:
		return intValue(v, a.Min, a.Max)
	case keyspec.ArgBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("%q: want true or false", v)
		}
		if b {
			return "1", nil
		}
		return "0", nil
	case keyspec.ArgDurationMS:
		d, err := keyspec.ParseDuration(v)
		if err != nil || d < a.MinDur || d > a.MaxDur {
			return "", fmt.Errorf("%q: want a duration in [%s, %s]", v, a.MinDur, a.MaxDur)
		}
		return strconv.FormatInt(d.Milliseconds(), 10), nil
	case keyspec.ArgString, keyspec.ArgBytes:
		if len(v) > a.MaxBytes {
			return "", fmt.Errorf("%d bytes: at most %d", len(v), a.MaxBytes)
		}
		return v, nil
	case keyspec.ArgToken:
		if !keypart.Token(v) {
			return "", fmt.Errorf("%q: want a token, 16..128 of [A-Za-z0-9_-]", v)
		}
	case keyspec.ArgHex, keyspec.ArgUUID, keyspec.ArgName:
		if err := textValue(a.Type, v, a.Len, a.MaxLen); err != nil {
			return "", err
		}
	case keyspec.ArgEnum:
		if a.Enum == nil || !slices.Contains(a.Enum.Values, v) {
			return "", fmt.Errorf("%q is not a value of the enum", v)
		}
	default:
		return "", fmt.Errorf("argument type %s", a.Type)
	}
	return v, nil
}

// autoArg is a fresh value for an argument the file leaves out, when its type
// has one: a random token, hex string or UUID.
func autoArg(a *keyspec.Arg) (string, bool) {
	switch a.Type {
	case keyspec.ArgToken:
		return randomText(22), true
	case keyspec.ArgHex:
		return randomHex(a.Len), true
	case keyspec.ArgUUID:
		return randomUUID(), true
	}
	return "", false
}

// Sample values need to be distinct and of a representative length, not
// secret: math/rand is enough.

func randomHex(n int) string { return randomFrom("0123456789abcdef", n) }

// randomUUID is a random version 4 UUID in its canonical lower-case form.
func randomUUID() string {
	h := []byte(randomHex(32))
	h[12] = '4'
	h[16] = "89ab"[rand.IntN(4)]
	return string(h[0:8]) + "-" + string(h[8:12]) + "-" + string(h[12:16]) + "-" + string(h[16:20]) + "-" + string(h[20:32])
}

// randomText is n random characters of [A-Za-z0-9]: a value no encoding
// shrinks.
func randomText(n int) string {
	return randomFrom("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", n)
}

func randomFrom(chars string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rand.IntN(len(chars))]
	}
	return string(b)
}
