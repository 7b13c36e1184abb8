package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// luagen acl --prefix P grants exactly deployment P of an instance with a
// deployment prefix, one pattern per family of its keys (~P cache:*, never
// ~P*, which reaches a deployment nested in P); without it, with a malformed
// one, a test prefix, one holding a family's name, or on an instance without a
// deployment prefix it is a command-line error.
func TestACLPrefix(t *testing.T) {
	base := []string{"acl", "--spec", "../../../gen/testdata/features/prefix/keyspec.yaml", "--lua", "../../../gen/testdata/features/prefix/lua", "--instance", "app"}
	code, stdout, stderr := luagen(t, "", append(base, "--prefix", "acme:production:")...)
	if code != 0 {
		t.Fatalf("acl: %d %s", code, stderr)
	}
	want := "user default reset off resetchannels -@all\nuser app reset on ~acme:production:cache:* resetchannels &acme:production:events:* -@all +evalsha +ping +publish +set +subscribe +unsubscribe\n" +
		"user app_loader reset on resetchannels -@all +ping +script|load\n" +
		"user app_operator reset on resetchannels -@all +function|kill +ping +script|kill\n" +
		"user app_monitor reset on resetchannels -@all +client|list +ping\n"
	if stdout != want {
		t.Fatalf("aclfile:\n%s\nwant:\n%s", stdout, want)
	}
	for _, bad := range [][]string{base, append(base, "--prefix", "acme:production"), append(base, "--prefix", "acme:*:"), append(base, "--prefix", "{t}:"),
		append(base, "--prefix", "test:acme:"), append(base, "--prefix", "acme:cache:"), append(base, "--prefix", "cache:")} {
		if code, _, _ := luagen(t, "", bad...); code != 2 {
			t.Errorf("%v exited %d, want 2", bad[len(bad)-1], code)
		}
	}
	if code, _, stderr := luagen(t, "", "acl", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua", "--instance", "vm1", "--prefix", "acme:"); code != 2 || !strings.Contains(stderr, "no deployment_prefix") {
		t.Fatalf("--prefix on vm1: %d %s", code, stderr)
	}
}

// luagen config says nothing of HAN when the spec does not.
func TestConfigSpeaksOnlyOfTheSpec(t *testing.T) {
	dir := t.TempDir()
	spec := `version: 1
instances:
  shop:
    topology: standalone
    server:
      persistence: {mode: none, source: "the cache is rebuilt from the database"}
      eviction: {policy: allkeys-lru, reason: every key is a cache entry}
    dbs:
      db0: {index: 0, url_env: REDIS_URL, user: shop}
users:
  shop:
    instance: shop
    select: {allow: false, reason: db0 only}
    key_prefixes: [{prefix: "shop:", reason: the shop}]
`
	os.WriteFile(filepath.Join(dir, "keyspec.yaml"), []byte(spec), 0o644)
	code, stdout, stderr := luagen(t, "", "config", "--spec", filepath.Join(dir, "keyspec.yaml"), "--instance", "shop")
	if code != 0 {
		t.Fatalf("config: %d %s", code, stderr)
	}
	for _, word := range []string{"HAN", "seed", "vm1", "vm2", "000 §", "004 §"} {
		if strings.Contains(stdout, word) {
			t.Errorf("config of a non-HAN spec says %q:\n%s", word, stdout)
		}
	}
	if !strings.Contains(stdout, "the cache is rebuilt from the database") {
		t.Errorf("config lacks the spec's own reason:\n%s", stdout)
	}
}
