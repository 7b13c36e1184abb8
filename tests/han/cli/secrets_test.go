package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// marker is in every hostile argument below; no output may show it.
const marker = "Hunter2pwSecret"

// luagen acl with hostile --password-file arguments (issue 12: a malformed one
// was echoed back, blank and one-character passwords were accepted, a
// world-readable file got no warning, a second file for a user silently won):
// each is refused or warned about as the table says, and nothing it prints
// shows any argument's secret. A file with mode bits beyond 0600 is refused
// (issue 21: it only got a warning) unless --allow-readable says so.
func TestPasswordFileArgumentsLeakNothing(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", marker+"-0123456789\n", 0o600)
	open := write("open", marker+"-0123456789\n", 0o644)
	group := write("group", marker+"-0123456789\n", 0o640)
	exec := write("exec", marker+"-0123456789\n", 0o700)
	readOnly := write("read-only", marker+"-0123456789\n", 0o400)
	blank := write("blank", "  \n", 0o600)
	empty := write("empty", "", 0o600)
	one := write("one", "x\n", 0o600)
	short := write("short", "Hunter2\n", 0o600)
	twoLines := write("two", marker+"-0123456789\n"+marker+"-second\n", 0o600)
	spaced := write("spaced", " "+marker+"-0123456789 \n", 0o600)
	base := []string{"acl", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua", "--instance", "vm1"}
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		want  string // in stderr
		aclOK bool   // an aclfile is printed
	}{
		{"the password as the argument", []string{marker}, 2, "--password-file #1: want USER=PATH", false},
		{"no user", []string{"=" + marker}, 2, "--password-file #1: want USER=PATH", false},
		{"no path", []string{"api_backend="}, 2, "--password-file #1: want USER=PATH", false},
		{"the password as the user", []string{marker + "=" + good}, 1, "--password-file #1: its USER is not a user of vm1", false},
		{"the password as the path", []string{"api_backend=" + marker}, 1, "password file of api_backend (--password-file #1): no such file", false},
		{"user=password", []string{"api_backend=" + marker + "-0123456789"}, 1, "no such file", false},
		{"a newline in the path", []string{"api_backend=" + good + "\n" + marker}, 2, "the path holds a control character", false},
		{"a bidi override in the path", []string{"api_backend=" + good + "\u202e" + marker}, 2, "the path holds a control character", false},
		{"blank", []string{"api_backend=" + blank}, 1, "empty or blank", false},
		{"empty", []string{"api_backend=" + empty}, 1, "empty or blank", false},
		{"one character", []string{"api_backend=" + one}, 1, "shorter than 16 bytes", false},
		{"short", []string{"api_backend=" + short}, 1, "shorter than 16 bytes", false},
		{"two lines", []string{"api_backend=" + twoLines}, 1, "control character", false},
		{"spaces around", []string{"api_backend=" + spaced}, 1, "spaces around it", false},
		{"a directory", []string{"api_backend=" + dir}, 1, "not a regular file", false},
		{"twice", []string{"api_backend=" + good, "api_backend=" + good}, 2, "--password-file #2: user api_backend is named again (first by #1)", false},
		{"a second user given twice", []string{"api_backend=" + good, "vm1_loader=" + good, "vm1_loader=" + open}, 2, "--password-file #3: user vm1_loader is named again (first by #2)", false},
		{"world-readable", []string{"api_backend=" + open}, 1, "password file of api_backend (--password-file #1) has mode 0644, beyond 0600 (readable by its group or others, or executable): chmod 600 it, or pass --allow-readable", false},
		{"group-readable", []string{"vm1_operator=" + group}, 1, "has mode 0640, beyond 0600", false},
		{"executable", []string{"api_backend=" + exec}, 1, "has mode 0700, beyond 0600", false},
		{"world-readable, allowed", []string{"--allow-readable", "api_backend=" + open}, 0, "warning: password file of api_backend (--password-file #1) has mode 0644, beyond 0600: allowed by --allow-readable", true},
		{"read-only for its owner", []string{"api_backend=" + readOnly}, 0, "", true},
		{"fine", []string{"api_backend=" + good}, 0, "", true},
	} {
		args := append([]string{}, base...)
		for _, a := range c.args {
			if strings.HasPrefix(a, "--") {
				args = append(args, a)
				continue
			}
			args = append(args, "--password-file", a)
		}
		code, stdout, stderr := luagen(t, "", args...)
		if code != c.code || !strings.Contains(stderr, c.want) || (stdout != "") != c.aclOK {
			t.Errorf("%s: exit %d (want %d), stdout %d bytes, stderr:\n%s\nwant %q", c.name, code, c.code, len(stdout), stderr, c.want)
		}
		if strings.Contains(stdout+stderr, marker) || strings.Contains(stdout+stderr, "Hunter2") {
			t.Errorf("%s: an argument's secret reached the output:\n%s%s", c.name, stdout, stderr)
		}
	}
}

// luagen config refuses every flag value that could add a directive or be read
// otherwise than meant (issue 12: a newline in --aclfile injected "bind 0.0.0.0"
// and "protected-mode no"), before it reads the spec, and prints no config then.
func TestConfigFlagsAreValidated(t *testing.T) {
	base := []string{"config", "--spec", "../../../keyspec.yaml", "--instance", "vm1"}
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
		"spec newline":      {"--spec", "../../../keyspec.yaml\nbind 0.0.0.0"},
		"server newline":    {"--server", "realtime\nbind 0.0.0.0"},
		"instance newline":  {"--instance", "vm1\nbind 0.0.0.0"},
		"instance bidi":     {"--instance", "vm1\u202e"},
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
	code, stdout, stderr = luagen(t, "", append(base, "--bind", "127.0.0.1 -::1 10.1.2.3", "--aclfile", "/etc/redis/vm1.acl")...)
	if code != 0 || !strings.Contains(stdout, "\nbind 127.0.0.1 -::1 10.1.2.3\n") || !strings.Contains(stdout, "\naclfile /etc/redis/vm1.acl\n") {
		t.Fatalf("a good config: %d %s\n%s", code, stderr, stdout)
	}
}
