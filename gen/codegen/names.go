package codegen

import (
	"strings"
	"unicode"
)

// initialisms are words written in capitals in Go names.
var initialisms = map[string]string{
	"acl": "ACL", "api": "API", "db": "DB", "dns": "DNS", "hmac": "HMAC", "http": "HTTP", "id": "ID",
	"ids": "IDs", "ip": "IP", "json": "JSON", "jwks": "JWKS", "ms": "MS", "rl": "RL", "rrtype": "RRType",
	"rt": "RT", "sha": "SHA", "ttl": "TTL", "url": "URL", "uuid": "UUID",
}

// words splits an identifier or an enum value on anything not a letter or digit.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// exported turns "cache_ip_hits" into "CacheIPHits" and "auth.login" into "AuthLogin".
func exported(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if up, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(up)
			continue
		}
		if letters := strings.TrimRight(w, "0123456789"); letters != w && initialisms[strings.ToLower(letters)] != "" {
			b.WriteString(initialisms[strings.ToLower(letters)] + w[len(letters):]) // db0 -> DB0
			continue
		}
		if w == strings.ToUpper(w) && len(w) > 1 {
			b.WriteString(w) // AAAA, CNAME stay as written
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + strings.ToLower(w[1:]))
	}
	out := b.String()
	if out == "" || unicode.IsDigit(rune(out[0])) {
		out = "X" + out
	}
	return out
}

// unexported turns "cache_ip_hits" into "cacheIPHits" and "user_id" into "userID".
func unexported(s string) string {
	ws := words(s)
	if len(ws) == 0 {
		return "x"
	}
	first := strings.ToLower(ws[0])
	rest := exported(strings.Join(ws[1:], "_"))
	if len(ws) == 1 {
		rest = ""
	}
	out := first + rest
	if goKeywords[out] {
		out += "_"
	}
	return out
}

var goKeywords = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true, "defer": true,
	"else": true, "fallthrough": true, "for": true, "func": true, "go": true, "goto": true, "if": true,
	"import": true, "interface": true, "map": true, "package": true, "range": true, "return": true,
	"select": true, "struct": true, "switch": true, "type": true, "var": true,
	// names the generated code itself uses inside functions
	"ctx": true, "err": true, "args": true, "keys": true, "argv": true, "v": true, "r": true, "s": true, "c": true, "b": true, "ok": true,
	"a": true, "k": true, "zero": true, "out": true,
}
