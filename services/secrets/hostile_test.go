package secrets_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
)

// hostileURL is a Redis URL that carries secrets: every string in secret must
// stay out of everything printed about it.
type hostileURL struct {
	raw    string
	secret []string
}

// hostileURLs are the ways a password reaches a URL, written right and wrong
// (issue 12: RedactURL missed 8 of 14; issue 21 added the URLs without "//",
// without a host and with skip_verify).
var hostileURLs = []hostileURL{
	{"redis://api_backend:Hunter2pw@redis:6379/1", []string{"Hunter2pw"}},
	{"redis://:Hunter2pw@redis:6379/0", []string{"Hunter2pw"}},
	{"redis://Hunter2pw@redis:6379/0", []string{"Hunter2pw"}},   // the password written as the user
	{"rediss://Hunter2pw:@redis:6380/0", []string{"Hunter2pw"}}, // as the user, empty password
	{"redis://u:Hunter2pw@redis/0?password=Qzx9secret", []string{"Hunter2pw", "Qzx9secret"}},
	{"redis://redis:6379/0?password=Qzx9secret", []string{"Qzx9secret"}}, // in the query
	{"redis://redis:6379/0?username=u&password=Qzx9secret&db=1", []string{"Qzx9secret"}},
	{"redis://redis:6379/0#Qzx9secret", []string{"Qzx9secret"}},                    // in a fragment
	{"redis://u:Hun#ter2pw@redis:6379/0", []string{"Hun", "ter2pw"}},               // '#' unescaped
	{"redis://u:Hun@ter2pw@redis:6379/0", []string{"Hun@ter2pw", "ter2pw"}},        // '@' unescaped
	{"redis://u:Hun?ter2pw@redis:6379/0", []string{"ter2pw"}},                      // '?' unescaped
	{"redis://u:Hun/ter2pw@redis:6379/0", []string{"ter2pw"}},                      // '/' unescaped
	{"redis://u:98765#ter2pw@redis:6379/0", []string{"98765", "ter2pw"}},           // digits before '#': read as a port
	{"redis://u:98765?ter2pw@redis:6379/0", []string{"98765", "ter2pw"}},           // digits before '?'
	{"redis://u:98765/ter2pw@redis:6379/0", []string{"98765", "ter2pw"}},           // digits before '/'
	{"redis://u:Hun%ter2pw@redis:6379/0", []string{"Hun%ter2pw", "%te", "ter2pw"}}, // '%' unescaped: url.Parse quotes it
	{"redis://u:Hun%zzter2pw@redis:6379/0", []string{"%zz", "zzter2pw"}},
	{"redis://u:Hunter2pw%@redis:6379/0", []string{"Hunter2pw"}},
	{"redis://u:Hun ter2pw@redis:6379/0", []string{"Hun ter2pw", "ter2pw"}}, // a space
	{"redis://u:Hun\nter2pw@redis:6379/0", []string{"ter2pw"}},              // a newline (log injection)
	{"redis://u:Hun\x00ter2pw@redis:6379/0", []string{"ter2pw"}},            // a NUL
	{"redis://u:Hunter2pw@[::1]:6379/0", []string{"Hunter2pw"}},
	{"redis://u:Hunter2pw@[::1:6379/0", []string{"Hunter2pw"}},  // a broken IPv6 host
	{"redis://u:Hunter2pw@redis:port/0", []string{"Hunter2pw"}}, // a non-numeric port
	{"redis://u:Hunter2pw@redis:6379/notadb", []string{"Hunter2pw"}},
	{"redis://u:Hunter2pw@redis:6379/0/Hunter3pw", []string{"Hunter2pw", "Hunter3pw"}},
	{"unix://u:Hunter2pw@/run/redis.sock?db=1", []string{"Hunter2pw"}},
	{"unix:///run/redis.sock?db=1&password=Qzx9secret", []string{"Qzx9secret"}},
	{"http://u:Hunter2pw@redis:6379/0", []string{"Hunter2pw"}},               // a wrong scheme
	{"Hunter2pw:Qzx9secret@redis:6379", []string{"Hunter2pw", "Qzx9secret"}}, // no scheme: the user reads as one
	{"redis:Hunter2pw@redis:6379", []string{"Hunter2pw"}},                    // opaque
	{"redis://u:Hunter2pw@redis:6379/0\r\nbind 0.0.0.0", []string{"Hunter2pw", "bind 0.0.0.0"}},
	{"  redis://u:Hunter2pw@redis:6379/0", []string{"Hunter2pw"}}, // a leading space
	{"redis://u:Hunter2pw@redis:6379/%2F..%2FHunter3pw", []string{"Hunter2pw", "Hunter3pw"}},
	{"redis://u:Hunter2pw@redis.example.com%2Fx:6379/0", []string{"Hunter2pw"}},
	{"redis://u:Hunter2pw@re\u202edis:6379/0", []string{"Hunter2pw"}}, // a bidi control in the host
	{"redis://" + strings.Repeat("a", 300) + ":Hunter2pw@redis:6379/0", []string{"Hunter2pw"}},
	{"Hunter2pw", []string{"Hunter2pw"}},                                          // a password where the URL belongs
	{"redis:u:Hunter2pw@redis:6379", []string{"Hunter2pw"}},                       // no "//": opaque, localhost:6379
	{"rediss://u:Hunter2pw@redis:6380/0?skip_verify=true", []string{"Hunter2pw"}}, // TLS without the certificate check
	{"rediss://u:Hunter2pw@redis:6380/0?skip_verify=Qzx9secret", []string{"Hunter2pw", "Qzx9secret"}},
	{"redis://:Hunter2pw@/0", []string{"Hunter2pw"}}, // no host
}

// Every path that logs a Redis URL or returns an error about one (RedactURL,
// ParseRedisURL, the application-URL prefix derivation, and a slog line of
// each) shows no secret of any hostile URL.
func TestHostileURLsLeakNothing(t *testing.T) {
	if len(hostileURLs) < 30 {
		t.Fatalf("%d hostile URLs, want at least 30", len(hostileURLs))
	}
	for _, h := range hostileURLs {
		var out []string
		red := secrets.RedactURL(h.raw)
		out = append(out, red)
		if _, err := secrets.ParseRedisURL("REDIS_URL", h.raw); err != nil {
			if !errors.Is(err, secrets.ErrBadURL) {
				t.Errorf("%q: ParseRedisURL error %v is not ErrBadURL", h.raw, err)
			}
			out = append(out, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
		}
		if p, err := runtime.PrefixFromURL(h.raw, 64); err != nil {
			out = append(out, err.Error(), fmt.Sprintf("%+v", err))
		} else {
			out = append(out, p)
		}
		var logged bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logged, nil))
		_, err := secrets.ParseRedisURL("REDIS_URL", h.raw)
		log.Error("redis", "url", red, "err", err)
		out = append(out, logged.String())
		all := strings.Join(out, "\n")
		for _, s := range h.secret {
			if strings.Contains(all, s) {
				t.Errorf("%q: %q leaked:\n%s", h.raw, s, all)
			}
		}
		if strings.ContainsAny(red, "\n\r\x00") {
			t.Errorf("%q: RedactURL kept a control character: %q", h.raw, red)
		}
	}
}

// What RedactURL keeps of well-formed URLs: scheme, host, port and database.
func TestRedactURLKeepsWhereItPoints(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://api_backend:pw@redis:6379/1":           "redis://redis:6379/1",
		"rediss://u:pw@10.0.0.5:6380/0?dial_timeout=3s": "rediss://10.0.0.5:6380/0",
		"redis://[::1]:6379":                            "redis://[::1]:6379",
		"unix:///run/redis/redis.sock?db=2":             "unix:///run/redis/redis.sock",
		"redis://localhost":                             "redis://localhost",
	} {
		if got := secrets.RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A struct holding an HMACKey in an unexported field, as the rate limiter and
// the idempotency keeper do: fmt cannot call the key's methods there, and still
// prints no byte of the secret under any verb.
func TestHMACKeyInAStructPrintsNoSecret(t *testing.T) {
	secret := []byte("Hunter2pw-0123456789abcdef-0123456789")
	k, err := secrets.NewHMACKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	type limiter struct {
		name string
		key  secrets.HMACKey
		Key  secrets.HMACKey
	}
	l := limiter{name: "l", key: k, Key: k}
	decimal := strings.Trim(fmt.Sprint(secret[:6]), "[]") // "72 117 110 ..."
	for _, s := range []string{
		fmt.Sprintf("%v", l), fmt.Sprintf("%+v", l), fmt.Sprintf("%#v", l), fmt.Sprintf("%s", k), fmt.Sprintf("%x", k),
		fmt.Sprintf("%q", k), fmt.Sprintf("%d", k), fmt.Sprintf("%+v", &l), fmt.Sprintf("%v", []any{k, &k}),
	} {
		if strings.Contains(s, "Hunter2pw") || strings.Contains(s, decimal) || strings.Contains(s, "48756e746572") {
			t.Errorf("printed the secret: %s", s)
		}
	}
}
