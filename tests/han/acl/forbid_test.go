package acl_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// Issue 16 (HAN VM1 spec §5): a HAN script that XADDs to a declared key makes
// luagen acl refuse, so XADD is never granted on vm1, whatever the script says.
func TestForbiddenCommandIsNeverGranted(t *testing.T) {
	src, err := os.ReadFile("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), "  rt_cleanup:\n", "  rt_announce:\n    instance: vm1\n    kind: presence\n    keys: [{name: conn, one_of: [rt_conn]}]\n    reply: {type: string, name: id}\n  rt_cleanup:\n", 1)
	spec, err := keyspec.Parse("keyspec.yaml", []byte(edited))
	if err != nil {
		t.Fatal(err)
	}
	lua := t.TempDir()
	if err := os.CopyFS(lua, os.DirFS("../../../lua")); err != nil {
		t.Fatal(err)
	}
	script := "local id = redis.call('XADD', KEYS[1], 'MAXLEN', 100, '*', 'e', 'joined')\nredis.call('PEXPIRE', KEYS[1], 90000)\nreturn id\n"
	if err := os.WriteFile(filepath.Join(lua, "vm1", "rt_announce.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS(lua), "lua")
	if err != nil {
		t.Fatal(err)
	}
	users, _, err := acl.Derive(spec, spec.Instance("vm1"), srcs, nil)
	if !errors.Is(err, acl.ErrForbidden) || !strings.Contains(err.Error(), "script rt_announce calls XADD, which vm1 forbids") {
		t.Fatalf("Derive = %v, %v; want ErrForbidden at the XADD", users, err)
	}
	// The spec as it is grants no stream command on an instance that forbids streams
	// (vm1, vm2; elang relays its outbox through one and may).
	spec, err = keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err = compiler.Load(spec, os.DirFS("../../../lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, in := range spec.Instances {
		if !slices.ContainsFunc(in.Forbid, func(f keyspec.Forbid) bool { return f.Value == keyspec.ValueStream }) {
			continue
		}
		checked++
		users, _, err := acl.Derive(spec, in, srcs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if text := acl.Render(users); strings.Contains(text, "+x") {
			t.Errorf("%s's ACL grants a stream command:\n%s", in.Name, text)
		}
	}
	if checked != 2 {
		t.Errorf("%d instances forbid streams, want vm1 and vm2", checked)
	}
}
