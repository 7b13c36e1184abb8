package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// luagen config refuses every flag value that could add a directive or be read
// otherwise than meant (issue 12: a newline in --aclfile injected "bind 0.0.0.0"
// and "protected-mode no"), before it reads the spec, and prints no config then.
func TestConfigFlagsAreValidated(t *testing.T) {
	spec := filepath.Join(workspace(t), "keyspec.yaml")
	addServerSection(t, spec)
	base := []string{"config", "--spec", spec, "--instance", "a"}
	for name, args := range map[string][]string{
		"aclfile newline":   {"--aclfile", "/etc/redis/users.acl\nbind 0.0.0.0\nprotected-mode no"},
		"aclfile CR":        {"--aclfile", "/etc/redis/users.acl\rbind 0.0.0.0"},
		"aclfile NUL":       {"--aclfile", "/etc/redis/users.acl\x00"},
		"aclfile relative":  {"--aclfile", "users.acl"},
		"aclfile dot-dot":   {"--aclfile", "/etc/redis/../redis/users.acl"},
		"aclfile space":     {"--aclfile", "/etc/redis/users.acl protected-mode no"},
		"aclfile quote":     {"--aclfile", `/etc/redis/"users.acl`},
		"aclfile bidi":      {"--aclfile", "/etc/redis/users\u202e.acl"},
		"aclfile empty":     {"--aclfile", ""},
		"bind newline":      {"--bind", "127.0.0.1\nprotected-mode no"},
		"bind tab":          {"--bind", "127.0.0.1\t10.0.0.1"},
		"bind public":       {"--bind", "0.0.0.0"},
		"bind public too":   {"--bind", "127.0.0.1 8.8.8.8"},
		"bind empty":        {"--bind", ""},
		"bind double space": {"--bind", "127.0.0.1  10.0.0.1"},
		"bind name":         {"--bind", "localhost"},
		"port zero":         {"--port", "0"},
		"port high":         {"--port", "65536"},
		"spec newline":      {"--spec", spec + "\nbind 0.0.0.0"},
		"server newline":    {"--server", "realtime\nbind 0.0.0.0"},
		"instance newline":  {"--instance", "a\nbind 0.0.0.0"},
		"instance bidi":     {"--instance", "a\u202e"},
		"tls cert alone":    {"--tls-cert-file", "/etc/redis/tls/server.crt"},
		"tls key newline": {"--tls-cert-file", "/etc/redis/tls/server.crt", "--tls-key-file", "/etc/redis/tls/server.key\nbind 0.0.0.0",
			"--tls-ca-file", "/etc/redis/tls/ca.crt"},
		"tls ca relative": {"--tls-cert-file", "/etc/redis/tls/server.crt", "--tls-key-file", "/etc/redis/tls/server.key",
			"--tls-ca-file", "ca.crt"},
		"tls auth without cert": {"--tls-auth-clients"},
	} {
		code, stdout, stderr := luagen(t, "", append(append([]string{}, base...), args...)...)
		if code != 2 || stdout != "" {
			t.Errorf("%s: exit %d, want 2; stdout:\n%s\nstderr: %s", name, code, stdout, stderr)
		}
		if regexp.MustCompile(`(?m)^(bind 0\.0\.0\.0|protected-mode no)`).MatchString(stdout + stderr) {
			t.Errorf("%s: a directive got through:\n%s%s", name, stdout, stderr)
		}
	}
	// TLS only: no plaintext port, the TLS port on --port, the files as given.
	code, stdout, stderr := luagen(t, "", append(append([]string{}, base...), "--port", "6380", "--tls-cert-file", "/etc/redis/tls/server.crt",
		"--tls-key-file", "/etc/redis/tls/server.key", "--tls-ca-file", "/etc/redis/tls/ca.crt", "--tls-auth-clients")...)
	for _, want := range []string{"\nport 0\n", "\ntls-port 6380\n", "\ntls-cert-file /etc/redis/tls/server.crt\n", "\ntls-key-file /etc/redis/tls/server.key\n",
		"\ntls-ca-cert-file /etc/redis/tls/ca.crt\n", "\ntls-auth-clients yes\n"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("a TLS config: exit %d, lacks %q: %s\n%s", code, want, stderr, stdout)
		}
	}
	// What it accepts is written as given.
	code, stdout, stderr = luagen(t, "", append(base, "--bind", "127.0.0.1 -::1 10.1.2.3", "--aclfile", "/etc/redis/app.acl")...)
	if code != 0 || !strings.Contains(stdout, "\nbind 127.0.0.1 -::1 10.1.2.3\n") || !strings.Contains(stdout, "\naclfile /etc/redis/app.acl\n") {
		t.Fatalf("a good config: %d %s\n%s", code, stderr, stdout)
	}
}
