package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestACLCommand(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "api_backend.pw")
	os.WriteFile(pw, []byte("correct horse battery staple\n"), 0o600)
	loaderPW := filepath.Join(dir, "vm1_loader.pw")
	os.WriteFile(loaderPW, []byte("loader horse battery staple\n"), 0o600)
	operatorPW := filepath.Join(dir, "vm1_operator.pw")
	os.WriteFile(operatorPW, []byte("operator horse battery staple\n"), 0o600)
	monitorPW := filepath.Join(dir, "vm1_monitor.pw")
	os.WriteFile(monitorPW, []byte("monitor horse battery staple\n"), 0o600)
	base := []string{"acl", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua"}

	code, stdout, stderr := luagen(t, "", append(base, "--instance", "vm1", "--password-file", "api_backend="+pw,
		"--password-file", "vm1_loader="+loaderPW, "--password-file", "vm1_operator="+operatorPW, "--password-file", "vm1_monitor="+monitorPW)...)
	if code != 0 {
		t.Fatalf("acl: %d\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, "horse") {
		t.Fatal("the plain password reached the output")
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "user default reset off ") || strings.ContainsAny(lines[0], "#>") ||
		!strings.HasPrefix(lines[1], "user api_backend reset on #") || strings.Contains(lines[1], "script|load") ||
		!strings.HasPrefix(lines[2], "user vm1_loader reset on #") || !strings.HasSuffix(lines[2], " -@all +ping +script|load") ||
		!strings.HasPrefix(lines[3], "user vm1_operator reset on #") || !strings.HasSuffix(lines[3], " -@all +function|kill +ping +script|kill") ||
		!strings.HasPrefix(lines[4], "user vm1_monitor reset on #") || !strings.HasSuffix(lines[4], " -@all +client|list +ping") ||
		strings.Contains(stderr, "warning") {
		t.Fatalf("aclfile:\n%s\nstderr:\n%s", stdout, stderr)
	}

	code, _, stderr = luagen(t, "", append(base, "--instance", "vm2")...)
	if code != 0 || !strings.Contains(stderr, "warning: user message_safety has no password file: it cannot log in") {
		t.Fatalf("acl without a password file: %d\n%s", code, stderr)
	}
	if code, _, stderr := luagen(t, "", append(base, "--instance", "vm2", "--password-file", "api_backend="+pw)...); code != 1 || !strings.Contains(stderr, `--password-file #1: its USER is not a user of vm2`) {
		t.Fatalf("a vm1 user's password for vm2: %d %s", code, stderr)
	}
	if code, _, stderr := luagen(t, "", append(base, "--instance", "vm1", "--password-file", "api_backend="+filepath.Join(dir, "missing"))...); code != 1 || strings.Contains(stderr, "correct") {
		t.Fatalf("a missing password file: %d %s", code, stderr)
	}
	if code, _, _ := luagen(t, "", base...); code != 2 {
		t.Fatalf("acl without --instance exited %d, want 2", code)
	}
	if code, _, _ := luagen(t, "", append(base, "--instance", "vm1", "--password-file", "nonsense")...); code != 2 {
		t.Fatalf("a malformed --password-file exited %d, want 2", code)
	}
}

func TestConfigCommand(t *testing.T) {
	base := []string{"config", "--spec", "../../../keyspec.yaml"}
	code, stdout, stderr := luagen(t, "", append(base, "--instance", "vm2", "--port", "6380", "--aclfile", "/etc/redis/vm2.acl")...)
	if code != 0 || !strings.Contains(stdout, "port 6380\n") || !strings.Contains(stdout, "aclfile /etc/redis/vm2.acl\n") || !strings.Contains(stdout, "maxmemory-policy allkeys-lru\n") {
		t.Fatalf("config: %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := luagen(t, "", append(base, "--instance", "vm1", "--bind", "0.0.0.0")...); code != 2 || !strings.Contains(stderr, "only loopback or private") {
		t.Fatalf("a public bind: %d %s", code, stderr)
	}
	if code, _, _ := luagen(t, "", base...); code != 2 {
		t.Fatalf("config without --instance exited %d", code)
	}
}

// The aclfile fits the client the services run on (issue 21): CLUSTER SLOTS on
// a cluster instance, CLIENT INFO with client: rueidis, from the spec or from
// --client as for luagen generate; never CLIENT TRACKING.
func TestACLFitsTheClient(t *testing.T) {
	base := []string{"acl", "--spec", "../../../examples/cacheservice/keyspec.yaml", "--lua", "../../../examples/cacheservice/lua", "--instance", "sessions", "--prefix", "acme:production:"}
	line := func(out, user string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "user "+user+" ") {
				return l + " "
			}
		}
		return ""
	}
	for _, c := range []struct {
		args       []string
		clientInfo bool
	}{{nil, false}, {[]string{"--client", "go-redis"}, false}, {[]string{"--client", "rueidis"}, true}} {
		code, stdout, stderr := luagen(t, "", append(append([]string{}, base...), c.args...)...)
		if code != 0 {
			t.Fatalf("%v: %d %s", c.args, code, stderr)
		}
		for _, u := range []string{"sessions", "sessions_loader"} {
			l := line(stdout, u)
			if !strings.Contains(l, " +cluster|slots ") || strings.Contains(l, " +client|info ") != c.clientInfo || strings.Contains(l, "tracking") {
				t.Errorf("%v: %s", c.args, l)
			}
		}
		for _, u := range []string{"sessions_operator", "sessions_monitor"} {
			if l := line(stdout, u); strings.Contains(l, "cluster|") || strings.Contains(l, "client|info") {
				t.Errorf("%v: %s", c.args, l)
			}
		}
	}
	if code, _, _ := luagen(t, "", append(append([]string{}, base...), "--client", "redigo")...); code != 2 {
		t.Errorf("--client redigo exited %d, want 2", code)
	}
}
