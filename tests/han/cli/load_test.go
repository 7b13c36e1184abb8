package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// luagen load is the deploy step: for a functions-mode instance it loads the
// library as the loader user and checks its version; for an evalsha instance it
// loads every script; a wrong password fails without showing it; the
// application user's credential cannot do it.
func TestLoadCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, pw string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loaderPW := write("loader", "load-test-loader-password")
	appPW := write("app", "load-test-app-password-0")
	wrongPW := write("wrong", "Hunter2pw-not-the-password")

	for _, c := range []struct {
		instance, spec, lua string
		app                 string
		check               func(t *testing.T, admin *redis.Client)
	}{
		{"app", "../../../gen/testdata/features/functions/keyspec.yaml", "../../../gen/testdata/features/functions/lua", "app", func(t *testing.T, admin *redis.Client) {
			libs, err := admin.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "app"}).Result()
			if err != nil || len(libs) != 1 || len(libs[0].Functions) != 3 {
				t.Fatalf("FUNCTION LIST: %+v %v", libs, err)
			}
		}},
		{"vm2", "../../../keyspec.yaml", "../../../lua", "message_safety", func(t *testing.T, admin *redis.Client) {
			for _, s := range vm2.AllScripts() {
				if ok, err := admin.ScriptExists(ctx, s.SHA1()).Result(); err != nil || !ok[0] {
					t.Errorf("%s not loaded: %v", s.Name(), err)
				}
			}
		}},
	} {
		t.Run(c.instance, func(t *testing.T) {
			loader, app := c.instance+"_loader", c.app
			code, aclfile, stderr := luagen(t, "", "acl", "--spec", c.spec, "--lua", c.lua, "--instance", c.instance,
				"--password-file", loader+"="+loaderPW, "--password-file", app+"="+appPW)
			if code != 0 {
				t.Fatalf("acl: %s", stderr)
			}
			srv := redistest.Start(t, redistest.WithACL(aclfile+"user admin on >admin-pass ~* &* +@all\n"))
			admin := srv.Client(0, func(o *redis.Options) { o.Username, o.Password = "admin", "admin-pass" })
			base := []string{"load", "--spec", c.spec, "--lua", c.lua, "--instance", c.instance, "--addr", srv.Addr}

			code, stdout, stderr := luagen(t, "", append(base, "--password-file", wrongPW)...)
			if code != 1 || strings.Contains(stdout+stderr, "Hunter2") || !strings.Contains(stderr, "WRONGPASS") {
				t.Fatalf("a wrong password: %d\n%s%s", code, stdout, stderr)
			}
			code, stdout, stderr = luagen(t, "", append(base, "--user", app, "--password-file", appPW)...)
			if code != 1 || !strings.Contains(stderr, "NOPERM") {
				t.Fatalf("as the application user: %d\n%s%s", code, stdout, stderr)
			}
			code, stdout, stderr = luagen(t, "", append(base, "--password-file", loaderPW)...)
			if code != 0 || !strings.Contains(stdout, srv.Addr) {
				t.Fatalf("load: %d\n%s%s", code, stdout, stderr)
			}
			c.check(t, admin)
		})
	}
	// A password file others may read is refused before anything connects,
	// unless --allow-readable (issue 21).
	readable := write("readable", "load-test-loader-password")
	if err := os.Chmod(readable, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := luagen(t, "", "load", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua", "--instance", "vm2", "--addr", "127.0.0.1:1", "--password-file", readable); code != 1 ||
		!strings.Contains(stderr, "has mode 0644, beyond 0600") || strings.Contains(stdout+stderr, "load-test-loader-password") {
		t.Errorf("a readable password file: %d %s%s", code, stdout, stderr)
	}
	for name, args := range map[string][]string{
		"no addr":      {"load", "--instance", "vm2", "--password-file", loaderPW},
		"bad addr":     {"load", "--instance", "vm2", "--addr", "Hunter2pw", "--password-file", loaderPW},
		"addr newline": {"load", "--instance", "vm2", "--addr", "127.0.0.1:1\nx", "--password-file", loaderPW},
	} {
		if code, stdout, stderr := luagen(t, "", args...); code != 2 || strings.Contains(stdout+stderr, "Hunter2") {
			t.Errorf("%s: %d %s%s", name, code, stdout, stderr)
		}
	}
}

// luagen load --cluster loads the library on every primary of the cluster.
func TestLoadCommandOnACluster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	pw := filepath.Join(t.TempDir(), "pw")
	// The test cluster's default user has nopass: any password logs in.
	if err := os.WriteFile(pw, []byte("cluster-test-any-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := luagen(t, "", "load", "--spec", "../../../gen/testdata/features/functions/keyspec.yaml", "--lua", "../../../gen/testdata/features/functions/lua",
		"--instance", "app", "--cluster", "--addr", cl.Addrs()[0], "--user", "default", "--password-file", pw)
	if code != 0 || strings.Count(stdout, "loaded") != 3 {
		t.Fatalf("load --cluster: %d\n%s%s", code, stdout, stderr)
	}
	for _, addr := range cl.Addrs() {
		libs, err := cl.Server(addr).Admin().FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "app"}).Result()
		if err != nil || len(libs) != 1 {
			t.Errorf("%s: %v %v", addr, libs, err)
		}
	}
}
