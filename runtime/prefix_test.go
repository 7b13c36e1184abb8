package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hanchat/luagen/runtime"
)

func TestCheckPrefix(t *testing.T) {
	for _, ok := range []string{"a:", "acme:production:", "tests:acme:", "acme:test:", "chat.example.com-8443:eu:", "A_b-c.9:", "cached:", "acme:session-eu:", "acme:b:", "acme:xb_:"} {
		if err := runtime.CheckPrefix(ok, 64, "cache", "session", "b_*"); err != nil {
			t.Errorf("CheckPrefix(%q) = %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"":                "want 2..64",
		":":               "want 2..64",
		"acme:production": `must end in ":" (write "acme:production:")`,
		// issue 25: the suggestion was "bad prefix:", refused too.
		"bad prefix":                  `want segments of [A-Za-z0-9._-] each ended by ':' (write "bad-prefix:")`,
		"acme/eu:":                    `want segments of [A-Za-z0-9._-] each ended by ':' (write "acme-eu:")`,
		"cache prefix":                `(write "cache-prefix:")`,
		":acme:":                      "empty segment",
		"acme::prod:":                 "empty segment",
		"acme:*:":                     "[A-Za-z0-9._-]",
		"{acme}:":                     "[A-Za-z0-9._-]",
		"acme prod:":                  "[A-Za-z0-9._-]",
		"acme:pröd:":                  "[A-Za-z0-9._-]",
		strings.Repeat("a", 64) + ":": "want 2..64 characters, got 65",
		// issue 21: the root of test prefixes, and a family's name in any segment.
		"test:":                 `"test:" is reserved for test prefixes`,
		"test:acme:production:": `"test:" is reserved for test prefixes`,
		"cache:":                `segment "cache" is the name of a key or channel family`,
		"acme:cache:":           `segment "cache" is the name of a key or channel family`,
		"acme:session:eu:":      `segment "session" is the name of a key or channel family`,
		"acme:b_x:":             `segment "b_x" starts as a key or channel family of the instance does (b_...)`,
		"b_:":                   `segment "b_" starts as a key or channel family`,
	} {
		err := runtime.CheckPrefix(bad, 64, "cache", "session", "b_*")
		if !errors.Is(err, runtime.ErrInvalidPrefix) || !strings.Contains(err.Error(), why) {
			t.Errorf("CheckPrefix(%q) = %v, want %q", bad, err, why)
		}
		// A suggestion is one CheckPrefix accepts.
		if _, rest, ok := strings.Cut(err.Error(), `(write "`); ok {
			s, _, _ := strings.Cut(rest, `"`)
			if err := runtime.CheckPrefix(s, 64, "cache", "session", "b_*"); err != nil {
				t.Errorf("CheckPrefix(%q) suggests %q, which it refuses: %v", bad, s, err)
			}
		}
	}
}

// No suggestion where the cleaned prefix is refused too (a family's name, too
// long, nothing left).
func TestCheckPrefixSuggestsNothingInvalid(t *testing.T) {
	for _, bad := range []string{"cache?", "test :", "***", strings.Repeat("a b", 30)} {
		err := runtime.CheckPrefix(bad, 64, "cache", "session", "b_*")
		if err == nil || strings.Contains(err.Error(), "(write") {
			t.Errorf("CheckPrefix(%q) = %v, want an error without a suggestion", bad, err)
		}
	}
}

func TestPrefixFromURL(t *testing.T) {
	for url, want := range map[string]string{
		"https://chat.example.com":              "chat.example.com:",
		"https://Chat.Example.com/":             "chat.example.com:",
		"http://localhost:8080/acme/app":        "localhost-8080:acme:app:",
		"https://shop.example.com:8443/eu/":     "shop.example.com-8443:eu:",
		"https://user:secret@example.com/a%20b": "example.com:a-b:",
		"https://example.com/Mixed_Case/x.y":    "example.com:mixed_case:x.y:",
	} {
		got, err := runtime.PrefixFromURL(url, 64)
		if err != nil || got != want {
			t.Errorf("PrefixFromURL(%q) = %q, %v; want %q", url, got, err, want)
		}
	}
	for _, bad := range []string{"", "not a url", "/just/a/path", "https://" + strings.Repeat("x", 70) + ".com/", "http://test/", "https://shop.example.com/cache", "https://shop.example.com/eu/session/"} {
		_, err := runtime.PrefixFromURL(bad, 64, "cache", "session")
		if !errors.Is(err, runtime.ErrInvalidPrefix) {
			t.Errorf("PrefixFromURL(%q) = %v", bad, err)
		}
	}
	// The error never shows a URL's credentials.
	if _, err := runtime.PrefixFromURL("https://user:hunter2@"+strings.Repeat("x", 70)+".com/", 64); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the URL: %v", err)
	}
}

func TestResolveAndTestPrefix(t *testing.T) {
	if p, err := runtime.ResolvePrefix("acme:production:", "https://ignored.example.com", 64); err != nil || p != "acme:production:" {
		t.Errorf("explicit: %q %v", p, err)
	}
	if p, err := runtime.ResolvePrefix("", "https://chat.example.com", 64); err != nil || p != "chat.example.com:" {
		t.Errorf("derived: %q %v", p, err)
	}
	if _, err := runtime.ResolvePrefix("acme:production", "https://chat.example.com", 64); !errors.Is(err, runtime.ErrInvalidPrefix) {
		t.Errorf("a bad explicit prefix fell back to the URL: %v", err)
	}
	if p, err := runtime.TestPrefix("acme:production:", 64); err != nil || p != "test:acme:production:" {
		t.Errorf("TestPrefix = %q %v", p, err)
	}
	if p, _ := runtime.TestPrefix("test:acme:", 64); p != "test:acme:" {
		t.Errorf("TestPrefix of a test prefix = %q", p)
	}
	if _, err := runtime.TestPrefix(strings.Repeat("a", 60)+":", 64); !errors.Is(err, runtime.ErrInvalidPrefix) {
		t.Errorf("a test prefix over max_len: %v", err)
	}
}

func TestKeySegment(t *testing.T) {
	for _, c := range []struct {
		key     string
		skip, i int
		want    string
	}{
		{"session:{abc}:data", 0, 1, "abc"},
		{"session:{abc}:data", 0, 2, "data"},
		{"acme:prod:session:{abc}:lock", len("acme:prod:"), 1, "abc"},
		{"a:b", 0, 5, ""},
		{"a", 3, 0, ""},
		{"x:{}:y", 0, 1, ""},
	} {
		if got := runtime.KeySegment(c.key, c.skip, c.i); got != c.want {
			t.Errorf("KeySegment(%q, %d, %d) = %q, want %q", c.key, c.skip, c.i, got, c.want)
		}
	}
}
