package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The bypass on a real server: idem_release with a second DEL key taken
// from ARGV deletes another user's idempotency record, and the generated ACL
// cannot stop it (the record is under the same prefix the user must have). What
// stops it is the compiler: luagen generate, check and acl refuse the script
// with its file:line, so no wrapper and no grant ever comes from it. The ACL
// derived from the accepted scripts refuses the commands the other bypasses
// asked to be granted (SCRIPT FLUSH, CLIENT LIST/PAUSE, INFO, DBSIZE, COPY, MOVE,
// SWAPDB, EVAL).
func TestBypassIsRefusedBeforeItReachesARealServer(t *testing.T) {
	ctx := context.Background()
	dir := workspace(t)
	evilPath := filepath.Join(dir, "lua", "vm1", "idem_release.lua")
	orig, err := os.ReadFile(evilPath)
	if err != nil {
		t.Fatal(err)
	}
	evil := strings.Replace(string(orig), "redis.call('DEL', KEYS[2])\n", "redis.call('DEL', KEYS[2], ARGV[1])\n", 1)
	if evil == string(orig) {
		t.Fatal("idem_release.lua changed: the DEL of the lock is not where this test expects it")
	}
	if err := os.WriteFile(evilPath, []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "lua", "vm1", "idem_release.lua") + ":11: DEL: argument 3 of redis.call is a key, and it is ARGV[1], not taken from KEYS"
	if code, _, stderr := luagen(t, dir, "generate"); code != 1 || !strings.HasPrefix(stderr, want) {
		t.Fatalf("generate exited %d:\n%s\nwant %s", code, stderr, want)
	}
	if code, stdout, stderr := luagen(t, "", "acl", "--spec", filepath.Join(dir, "keyspec.yaml"), "--lua", filepath.Join(dir, "lua"), "--instance", "vm1"); code != 1 || stdout != "" || !strings.HasPrefix(stderr, want) {
		t.Fatalf("acl exited %d:\n%s%s", code, stdout, stderr)
	}

	// The server runs the ACL luagen derives from the accepted scripts.
	pw := filepath.Join(t.TempDir(), "api_backend.pw")
	if err := os.WriteFile(pw, []byte("bypass-test-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loaderPW := filepath.Join(t.TempDir(), "vm1_loader.pw")
	if err := os.WriteFile(loaderPW, []byte("bypass-test-loader-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, aclfile, stderr := luagen(t, "", "acl", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua", "--instance", "vm1", "--password-file", "api_backend="+pw, "--password-file", "vm1_loader="+loaderPW)
	if code != 0 {
		t.Fatalf("acl: %d %s", code, stderr)
	}
	srv := redistest.Start(t, redistest.WithACL(aclfile))
	api := srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "api_backend", "bypass-test-password" })
	loader := srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "vm1_loader", "bypass-test-loader-password" })

	victim := "han:api:idem:create:11111111-1111-1111-1111-111111111111:" + strings.Repeat("ab", 32)
	mine := "han:api:idem:create:22222222-2222-2222-2222-222222222222:" + strings.Repeat("cd", 32)
	myLock := "han:api:idemlock:create:22222222-2222-2222-2222-222222222222:" + strings.Repeat("cd", 32)
	if err := api.HSet(ctx, victim, "state", "completed", "status", "201").Err(); err != nil {
		t.Fatalf("the victim's record: %v", err)
	}
	// The attacker's lock holds the victim's record name as its owner token, so
	// the owner check passes and ARGV[1] names the victim.
	if err := api.Set(ctx, myLock, victim, 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The application user cannot load it (issue 12); the loader user, which
	// loads whatever it is given, can, so what it loads must be what generate
	// accepted.
	if err := api.ScriptLoad(ctx, evil).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("SCRIPT LOAD as api_backend: %v, want NOPERM", err)
	}
	sha, err := loader.ScriptLoad(ctx, evil).Result()
	if err != nil {
		t.Fatalf("SCRIPT LOAD as vm1_loader: %v", err)
	}
	if err := api.EvalSha(ctx, sha, []string{mine, myLock}, victim).Err(); err != nil {
		t.Fatalf("the refused script on the server: %v", err)
	}
	if n := api.Exists(ctx, victim).Val(); n != 0 {
		t.Fatal("the bypass did not delete the victim's record: this test no longer shows the harm the compiler prevents")
	}

	for _, cmd := range [][]any{
		{"script", "flush"}, {"client", "list"}, {"client", "pause", "10"}, {"info"}, {"dbsize"},
		{"copy", mine, mine + ":x", "db", "2"}, {"move", mine, "2"}, {"swapdb", "0", "2"}, {"keys", "*"},
		{"eval", "return 1", "0"}, {"flushdb"}, {"script", "load", "return 1"}, {"function", "load", "#!lua name=x\nredis.register_function('f', function() return 1 end)"},
		{"script", "kill"}, {"function", "kill"},
	} {
		if err := api.Do(ctx, cmd...).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("api_backend %v: %v, want NOPERM", cmd, err)
		}
	}
}
