package luatest

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// parseInt parses s the way Redis's string2ll does: an optional '-', no '+', no
// spaces, no leading zeros, and within the int64 range.
func parseInt(s string) (int64, bool) {
	if len(s) == 0 || len(s) >= 21 {
		return 0, false
	}
	if s == "0" {
		return 0, true
	}
	p := s
	neg := false
	if p[0] == '-' {
		neg = true
		p = p[1:]
		if p == "" {
			return 0, false
		}
	}
	if p[0] < '1' || p[0] > '9' {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > math.MaxUint64/10 {
			return 0, false
		}
		v *= 10
		if v > math.MaxUint64-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if neg {
		if v > uint64(math.MaxInt64)+1 {
			return 0, false
		}
		return -int64(v), true // -(2^63) wraps to MinInt64, as intended
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

var (
	decimalRe = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	hexRe     = regexp.MustCompile(`^[+-]?0[xX]([0-9a-fA-F]+(\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?$`)
	infRe     = regexp.MustCompile(`^[+-]?(?i:inf|infinity)$`)
	nanRe     = regexp.MustCompile(`^[+-]?(?i:nan)(\([0-9A-Za-z_]*\))?$`)
)

// strtod parses the whole of s as C's strtod would (decimal, hexadecimal, inf,
// nan; no leading space). rangeErr reports what strtod signals with ERANGE and a
// result of ±HUGE_VAL or zero: an overflow, or a non-zero number that underflowed.
func strtod(s string) (v float64, ok, rangeErr bool) {
	if isShortDecimal(s) {
		// The common case (timestamps, counts): exact in a float64, no regexp.
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil, false
	}
	switch {
	case infRe.MatchString(s):
		if s[0] == '-' {
			return math.Inf(-1), true, false
		}
		return math.Inf(1), true, false
	case nanRe.MatchString(s):
		return math.NaN(), true, false
	case hexRe.MatchString(s):
		t := s
		if !strings.ContainsAny(t, "pP") {
			t += "p0"
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, false, false
		}
		return f, true, math.IsInf(f, 0) || (f == 0 && nonZeroMantissa(s[strings.IndexAny(s, "xX")+1:]))
	case decimalRe.MatchString(s):
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, false, false
		}
		return f, true, math.IsInf(f, 0) || (f == 0 && nonZeroMantissa(s))
	}
	return 0, false, false
}

// isShortDecimal reports whether s is an optional '-' and 1 to 15 digits.
func isShortDecimal(s string) bool {
	digits := s
	if digits != "" && digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" || len(digits) > 15 {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// nonZeroMantissa reports whether the digits before any exponent include a non-zero one.
func nonZeroMantissa(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'e' || c == 'E' || c == 'p' || c == 'P':
			return false
		case c >= '1' && c <= '9', c >= 'a' && c <= 'd', c >= 'A' && c <= 'D', c == 'f', c == 'F':
			return true
		}
	}
	return false
}

// parseFloat parses s the way Redis's getDoubleFromObject does (ZADD scores and
// increments): the whole string, no leading space, no NaN, no overflow, no
// underflow to zero.
func parseFloat(s string) (float64, bool) {
	if s == "" || isCSpace(s[0]) {
		return 0, false
	}
	v, ok, rangeErr := strtod(s)
	if !ok || rangeErr || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// parseRangeFloat parses one end of a score range as Redis's zslParseRange does:
// strtod must stop at the end of the C string, so leading spaces are allowed and
// the empty string is 0; out-of-range values are accepted as strtod returns them.
func parseRangeFloat(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return 0, true
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	v, ok, _ := strtod(t)
	if !ok || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// formatG formats f like C's printf("%.<prec>g") with glibc's spelling of the
// special values: inf, -inf, nan, -nan.
func formatG(f float64, prec int) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	}
	return fmt.Sprintf("%.*g", prec, f)
}

// formatArg is how Redis 7.0 turns a Lua number argument of redis.call into a
// command argument: "%.17g".
func formatArg(f float64) string { return formatG(f, 17) }

// formatLuaNumber is how Lua 5.1 turns a number into a string: "%.14g".
func formatLuaNumber(f float64) string { return formatG(f, 14) }

// formatScore is how Redis 7.0 replies with a sorted set score (addReplyDouble):
// "%.17g", with inf and -inf spelled out.
func formatScore(f float64) string { return formatG(f, 17) }

// luaToInteger converts a Lua number the way C's (long long) cast does on x86-64:
// truncation toward zero; NaN and out-of-range values give the "integer
// indefinite" value, math.MinInt64.
func luaToInteger(f float64) int64 {
	if math.IsNaN(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(f)
}

// parseLuaNumber converts a string to a number as Lua 5.1 does (lua_str2number
// with glibc's strtod): surrounding spaces allowed, decimal or hexadecimal.
func parseLuaNumber(s string) (float64, error) {
	t := strings.Trim(s, " \t\n\v\f\r")
	v, ok, _ := strtod(t)
	if t == "" || !ok {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return v, nil
}

// strtodPrefix is C's strtod on the start of s: the value of the longest prefix
// that reads as a number (after leading spaces: decimal, hexadecimal, inf,
// infinity, nan, nan(...)), and how many bytes it took; 0 when none does.
func strtodPrefix(s string) (float64, int) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	lower := strings.ToLower(s[i:min(len(s), i+8)])
	switch {
	case strings.HasPrefix(lower, "infinity"):
		return math.Copysign(math.Inf(1), signOf(neg)), i + 8
	case strings.HasPrefix(lower, "inf"):
		return math.Copysign(math.Inf(1), signOf(neg)), i + 3
	case strings.HasPrefix(lower, "nan"):
		j := i + 3
		if j < len(s) && s[j] == '(' {
			k := j + 1
			for k < len(s) && (isAlnum(s[k]) || s[k] == '_') {
				k++
			}
			if k < len(s) && s[k] == ')' {
				j = k + 1
			}
		}
		return math.Copysign(math.NaN(), signOf(neg)), j
	}
	if i+1 < len(s) && s[i] == '0' && (s[i+1]|0x20) == 'x' {
		j := i + 2
		digits := 0
		for j < len(s) && hexDigit(s[j]) >= 0 {
			j++
			digits++
		}
		if j < len(s) && s[j] == '.' {
			j++
			for j < len(s) && hexDigit(s[j]) >= 0 {
				j++
				digits++
			}
		}
		if digits > 0 {
			mant := s[start:j]
			if j < len(s) && (s[j]|0x20) == 'p' {
				if e := exponentLen(s[j+1:]); e > 0 {
					j += 1 + e
				}
			}
			text := s[start:j]
			if len(text) == len(mant) {
				text += "p0"
			}
			v, _ := strconv.ParseFloat(text, 64)
			return v, j
		}
		// "0x" without digits: strtod reads the 0 alone.
		return math.Copysign(0, signOf(neg)), i + 1
	}
	j := i
	digits := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if j < len(s) && (s[j]|0x20) == 'e' {
		if e := exponentLen(s[j+1:]); e > 0 {
			j += 1 + e
		}
	}
	v, _ := strconv.ParseFloat(s[start:j], 64)
	return v, j
}

// exponentLen is the length of an optionally signed run of digits at the start
// of s, 0 when there are no digits.
func exponentLen(s string) int {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	d := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == d {
		return 0
	}
	return i
}

func signOf(neg bool) float64 {
	if neg {
		return -1
	}
	return 1
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// getLong is getLongFromObjectOrReply: a string2ll integer, or msg (Redis's
// "value is not an integer or out of range" when msg is "").
func getLong(s, msg string) (int64, reply) {
	v, ok := parseInt(s)
	if !ok {
		if msg != "" {
			return 0, errReply("ERR " + msg)
		}
		return 0, errNotInt
	}
	return v, nil
}

// getRangeLong is getRangeLongFromObjectOrReply: an integer within [lo, hi];
// msg (when not "") answers both a non-integer and one out of range.
func getRangeLong(s string, lo, hi int64, msg string) (int64, reply) {
	v, errr := getLong(s, msg)
	if errr != nil {
		return 0, errr
	}
	if v < lo || v > hi {
		if msg != "" {
			return 0, errReply("ERR " + msg)
		}
		return 0, errReply(fmt.Sprintf("ERR value is out of range, value must between %d and %d", lo, hi))
	}
	return v, nil
}

// parseLimit reads the offset and count of a LIMIT option (ZRANGE's, SORT's);
// one that is no integer ends the command.
func parseLimit(offset, count string) (int64, int64) {
	return must(getLong(offset, "")), must(getLong(count, ""))
}

// getPositiveLong is getPositiveLongFromObjectOrReply: an integer >= 0.
func getPositiveLong(s, msg string) (int64, reply) {
	if msg == "" {
		msg = "value is out of range, must be positive"
	}
	return getRangeLong(s, 0, math.MaxInt64, msg)
}
