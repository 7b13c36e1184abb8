package serverconf_test

import (
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
)

func TestHANConfigs(t *testing.T) {
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vm1, err := serverconf.Render(spec, spec.Instance("vm1"), serverconf.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	vm2, err := serverconf.Render(spec, spec.Instance("vm2"), serverconf.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bind 127.0.0.1 -::1\n", "protected-mode yes\n", "aclfile /etc/redis/users.acl\n", "enable-debug-command no\n",
		"appendonly yes\n", "appendfsync everysec\n", "maxmemory-policy volatile-lru\n", "PostgreSQL idempotency_records", "# TBD R1/R2", "# TBD R6"} {
		if !strings.Contains(vm1, want) {
			t.Errorf("vm1 config lacks %q", want)
		}
	}
	for _, want := range []string{"appendonly no\n", `save ""` + "\n", "maxmemory-policy allkeys-lru\n", "# TBD R1/R2", "rebuildable"} {
		if !strings.Contains(vm2, want) {
			t.Errorf("vm2 config lacks %q", want)
		}
	}
	if strings.Contains(vm2, "R6") || strings.Contains(vm2, "idempotency") {
		t.Error("vm2's config speaks of vm1")
	}
}
