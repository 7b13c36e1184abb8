package runtime

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrInvalidPrefix: a deployment prefix failed its rule, or none could be derived.
var ErrInvalidPrefix = errors.New("invalid deployment prefix")

// PrefixError is a deployment prefix refused or not derivable. It shows the
// prefix (a namespace name, not a secret) but never a URL's credentials.
type PrefixError struct {
	Prefix string
	Reason string
}

func (e *PrefixError) Error() string {
	if e.Prefix == "" {
		return "deployment prefix: " + e.Reason
	}
	return fmt.Sprintf("deployment prefix %q: %s", e.Prefix, e.Reason)
}

// Is matches ErrInvalidPrefix.
func (e *PrefixError) Is(target error) bool { return target == ErrInvalidPrefix }

// prefixSeparator ends every deployment prefix and separates its segments.
const prefixSeparator = ":"

// testPrefixRoot starts every prefix TestPrefix makes.
const testPrefixRoot = "test:"

// CheckPrefix checks a deployment prefix: 2..maxLen characters of
// [A-Za-z0-9._-] in non-empty segments, each ended by ':' (so "acme:production:").
// The final ':' keeps one deployment's ACL pattern (~acme:prod:cache:*) from
// reaching another's keys (acme:production:...); no glob character, brace (a
// hash tag) or space can appear.
//
// Deployments may nest (acme: and acme:eu:), so the ACL grants a deployment its
// families (~acme:cache:*, never ~acme:*), and no segment of a deployment
// prefix may be the name of a family: reserved lists them (the generated
// package passes its instance's, keyspec's DeploymentPrefix.Reserved); an
// entry ending in '*' ("b_*") is a start no segment may have. Nor may
// the first segment be "test", the root of the prefixes TestPrefix makes
// (testPrefixRoot): a deployment never shares a namespace with tests.
func CheckPrefix(p string, maxLen int, reserved ...string) error {
	reason := prefixReason(p, maxLen, reserved)
	if reason == "" {
		return nil
	}
	return &PrefixError{Prefix: p, Reason: reason + suggestion(p, func(s string) bool { return prefixReason(s, maxLen, reserved) == "" })}
}

// prefixReason is why CheckPrefix refuses p, or "".
func prefixReason(p string, maxLen int, reserved []string) string {
	if reason := syntaxReason(p, maxLen); reason != "" {
		return reason
	}
	segs := strings.Split(strings.TrimSuffix(p, prefixSeparator), prefixSeparator)
	if segs[0]+prefixSeparator == testPrefixRoot {
		return fmt.Sprintf("%q is reserved for test prefixes (the generated Prefix's Test method makes them); a deployment prefix starts otherwise", testPrefixRoot)
	}
	for _, seg := range segs {
		for _, r := range reserved {
			if head, ok := strings.CutSuffix(r, "*"); ok && strings.HasPrefix(seg, head) {
				return fmt.Sprintf("segment %q starts as a key or channel family of the instance does (%s...): a deployment prefix holding it would nest in another's namespace or hold one nested in it; name it otherwise", seg, head)
			} else if !ok && seg == r {
				return fmt.Sprintf("segment %q is the name of a key or channel family of the instance (%s:...): a deployment prefix holding it would nest in another's namespace or hold one nested in it; name it otherwise", seg, r)
			}
		}
	}
	return ""
}

// checkPrefixSyntax is CheckPrefix's syntax alone, which test prefixes obey too.
func checkPrefixSyntax(p string, maxLen int) error {
	reason := syntaxReason(p, maxLen)
	if reason == "" {
		return nil
	}
	return &PrefixError{Prefix: p, Reason: reason + suggestion(p, func(s string) bool { return syntaxReason(s, maxLen) == "" })}
}

// syntaxReason is why p breaks the syntax of prefixes, or "".
func syntaxReason(p string, maxLen int) string {
	if len(p) < 2 || len(p) > maxLen {
		return fmt.Sprintf("want 2..%d characters, got %d", maxLen, len(p))
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, prefixSeparator), prefixSeparator) {
		if seg == "" {
			return "an empty segment (a leading ':' or '::')"
		}
		if strings.IndexFunc(seg, func(r rune) bool { return !segmentRune(r) }) >= 0 {
			return "want segments of [A-Za-z0-9._-] each ended by ':'"
		}
	}
	if !strings.HasSuffix(p, prefixSeparator) {
		return fmt.Sprintf("must end in %q", prefixSeparator)
	}
	return ""
}

// segmentRune reports a character a prefix's segment may hold.
func segmentRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// suggestion is ` (write "acme-eu:")`: p with every character a segment may
// not hold made '-', empty segments dropped and ':' at the end, when valid
// accepts that; "" when it does not (a suggestion is always one the check
// takes) or it is p itself.
func suggestion(p string, valid func(string) bool) string {
	var segs []string
	for _, seg := range strings.Split(p, prefixSeparator) {
		seg = strings.Map(func(r rune) rune {
			if segmentRune(r) {
				return r
			}
			return '-'
		}, seg)
		for strings.Contains(seg, "--") {
			seg = strings.ReplaceAll(seg, "--", "-")
		}
		if seg = strings.Trim(seg, "-"); seg != "" {
			segs = append(segs, seg)
		}
	}
	if len(segs) == 0 {
		return ""
	}
	s := strings.Join(segs, prefixSeparator) + prefixSeparator
	if s == p || !valid(s) {
		return ""
	}
	return fmt.Sprintf(" (write %q)", s)
}

// PrefixFromURL derives the default deployment prefix from the application's
// URL (APP_URL): its host in lower case, "-port" when the URL names a port, then
// one segment per path element, each character outside [a-z0-9._-] replaced by
// '-', each segment ended by ':'. So "https://Chat.Example.com/" gives
// "chat.example.com:" and "http://localhost:8080/acme/app" gives
// "localhost-8080:acme:app:". Applications that share a URL must set an
// explicit prefix instead. A URL that yields no valid prefix of at most maxLen
// characters is an error, never a shortened or hashed name, and so is a URL
// with an '@' after its authority (a password whose unescaped '/', '?' or '#'
// would put part of it into the host or path, and so into every key); user
// info itself is ignored. The error never shows the URL (it may carry
// credentials). reserved are CheckPrefix's: a URL whose prefix would hold one
// (https://shop.example.com/cache) needs an explicit prefix.
func PrefixFromURL(appURL string, maxLen int, reserved ...string) (string, error) {
	if appURL == "" {
		return "", &PrefixError{Reason: "the application URL is empty: set it, or set an explicit prefix"}
	}
	if ambiguousAuthority(appURL) {
		// A password's unescaped '/', '?' or '#' ended the authority early, so
		// part of it would read as the host or the path: no part of such a URL
		// may become a key.
		return "", &PrefixError{Reason: "the application URL has an '@' after its host (an unescaped '/', '?' or '#' in its user info?): set an explicit prefix"}
	}
	u, err := url.Parse(appURL)
	if err != nil || u.Hostname() == "" {
		return "", &PrefixError{Reason: "the application URL has no host (want scheme://host[:port][/path])"}
	}
	host := u.Hostname()
	if port := u.Port(); port != "" {
		host += "-" + port
	}
	segs := []string{clean(host)}
	for _, s := range strings.Split(u.EscapedPath(), "/") {
		if s == "" {
			continue
		}
		if uns, err := url.PathUnescape(s); err == nil {
			s = uns
		}
		segs = append(segs, clean(s))
	}
	p := strings.Join(segs, prefixSeparator) + prefixSeparator
	if err := CheckPrefix(p, maxLen, reserved...); err != nil {
		return "", &PrefixError{Prefix: p, Reason: "derived from the application URL: " + err.(*PrefixError).Reason + "; set an explicit prefix"}
	}
	return p, nil
}

// ambiguousAuthority reports whether raw has an '@' after the end of its
// authority (the first '/', '?' or '#' after "scheme://"), or anywhere in a URL
// without "//": there the parts cannot be told apart.
func ambiguousAuthority(raw string) bool {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return strings.ContainsRune(raw, '@')
	}
	i := strings.IndexAny(rest, "/?#")
	return i >= 0 && strings.ContainsRune(rest[i:], '@')
}

func clean(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

// ResolvePrefix is the deployment prefix of a process: the explicit one when
// set (checked, never altered), else the one derived from the application URL;
// reserved are CheckPrefix's.
func ResolvePrefix(explicit, appURL string, maxLen int, reserved ...string) (string, error) {
	if explicit != "" {
		if err := CheckPrefix(explicit, maxLen, reserved...); err != nil {
			return "", err
		}
		return explicit, nil
	}
	return PrefixFromURL(appURL, maxLen, reserved...)
}

// TestPrefix is the prefix tests use instead of a deployment's: "test:" in front
// of it, so an ACL for the deployment (~acme:production:*) never reaches a test
// key and a test never writes into a deployment's namespace. A prefix that
// already starts with "test:" is returned as it is.
func TestPrefix(p string, maxLen int) (string, error) {
	if !strings.HasPrefix(p, testPrefixRoot) {
		p = testPrefixRoot + p
	}
	if err := checkPrefixSyntax(p, maxLen); err != nil {
		return "", err
	}
	return p, nil
}

// NoPrefix is the error of a key builder or wrapper given the zero prefix.
func NoPrefix(key string) error {
	return &KeyPartError{Key: key, Part: "deployment prefix", Reason: "the zero prefix: make one with NewPrefix (or PrefixFromEnv)"}
}
