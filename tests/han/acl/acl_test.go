package acl_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// The HAN ACLs: each instance's file names nothing of the other, grants no
// dangerous command, and gives api_backend SELECT (CONTRADICTION 2) but not
// message_safety.
func TestHANACLs(t *testing.T) {
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../../../lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, in := range spec.Instances {
		users, _, err := acl.Derive(spec, in, srcs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if in.Prefix != nil { // rendered only for one deployment (elang)
			users = acl.Deploy(users, "acme:production:")
		}
		files[in.Name] = acl.Render(users)
	}
	if m := regexp.MustCompile(`han:safety|message_safety`).FindString(files["vm1"]); m != "" {
		t.Errorf("vm1's aclfile names %q", m)
	}
	if m := regexp.MustCompile(`han:api|han:rt|han:coord|han:settings|han:legacy|api_backend`).FindString(files["vm2"]); m != "" {
		t.Errorf("vm2's aclfile names %q", m)
	}
	for name, f := range files {
		for _, bad := range []string{"+@all", "~*", "+flushall", "+flushdb", "+keys", "+config", "+debug", "+shutdown", "+monitor", "+script|flush", "+acl", "+eval "} {
			if strings.Contains(f, bad) {
				t.Errorf("%s grants %s", name, bad)
			}
		}
		first, _, _ := strings.Cut(f, "\n")
		if !strings.HasPrefix(first, "user default reset off ") || strings.ContainsAny(first, "#>") || strings.Contains(first, "nopass") {
			t.Errorf("%s does not switch the default user off, passwordless, first: %s", name, first)
		}
	}
	if !strings.Contains(files["vm1"], "+select") || strings.Contains(files["vm2"], "+select") {
		t.Error("SELECT must be granted on vm1 (REDIS_REALTIME_URL=/1) and only there")
	}
	// vm1 persists with AOF: its (off) default user may replay the scripts' writes
	// (redis/redis#14541); vm2 keeps nothing on disk, so its default user gets nothing.
	vm1Default, _, _ := strings.Cut(files["vm1"], "\n")
	for _, want := range []string{" ~han:api:* ", " ~han:rt:* ", " +hset", " +pexpireat", " +zadd"} {
		if !strings.Contains(vm1Default+" ", want) {
			t.Errorf("vm1's default user lacks %q for AOF replay: %s", want, vm1Default)
		}
	}
	for _, never := range []string{"+evalsha", "+script|load", "+publish", "+subscribe", "+get ", "&"} {
		if strings.Contains(vm1Default+" ", never) {
			t.Errorf("vm1's default user is granted %q, which replay does not need: %s", never, vm1Default)
		}
	}
	if vm2Default, _, _ := strings.Cut(files["vm2"], "\n"); vm2Default != acl.DefaultLine {
		t.Errorf("vm2's default user: %s", vm2Default)
	}
}

// After the cutover the stub's prefix and its cutover commands leave the ACL.
func TestCutOverStubLeavesTheACL(t *testing.T) {
	src, err := os.ReadFile("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for state, wantStub := range map[string]bool{"alive": true, "cut_over": false} {
		spec, err := keyspec.Parse("keyspec.yaml", []byte(strings.Replace(string(src), "state: alive", "state: "+state, 1)))
		if err != nil {
			t.Fatal(err)
		}
		srcs, err := compiler.Load(spec, os.DirFS("../../../lua"), "lua")
		if err != nil {
			t.Fatal(err)
		}
		users, _, err := acl.Derive(spec, spec.Instance("vm1"), srcs, nil)
		if err != nil {
			t.Fatal(err)
		}
		line := users[1].Line()
		for _, stub := range []string{"~han:legacy:*", "+scan", "+unlink"} {
			if strings.Contains(line, stub+" ") != wantStub {
				t.Errorf("%s: %s granted = %v, want %v", state, stub, !wantStub, wantStub)
			}
		}
	}
}
