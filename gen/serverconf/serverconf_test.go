package serverconf_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
)

func TestHANConfigs(t *testing.T) {
	spec, err := keyspec.Load("../../keyspec.yaml")
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

func TestPublicBindIsRefused(t *testing.T) {
	spec, _ := keyspec.Load("../../keyspec.yaml")
	for _, bind := range []string{"0.0.0.0", "203.0.113.5", "127.0.0.1 8.8.8.8", "::"} {
		o := serverconf.DefaultOptions
		o.Bind = bind
		if _, err := serverconf.Render(spec, spec.Instance("vm1"), o); err == nil {
			t.Errorf("bind %q accepted", bind)
		}
	}
	for _, bind := range []string{"10.0.3.4", "172.16.0.9 127.0.0.1", "192.168.1.2", "-::1"} {
		o := serverconf.DefaultOptions
		o.Bind = bind
		if _, err := serverconf.Render(spec, spec.Instance("vm1"), o); err != nil {
			t.Errorf("bind %q refused: %v", bind, err)
		}
	}
}

// Spec text (seeds, reasons) is folded into comments: it can never add a directive.
func TestSpecTextCannotInjectDirectives(t *testing.T) {
	src, err := os.ReadFile("../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	evil := strings.Replace(string(src), `persistence: {mode: aof_everysec, source: "HAN VM1 spec §12`, `persistence: {mode: aof_everysec, source: "x\nenable-debug-command yes\nprotected-mode no\nHAN VM1 spec §12`, 1)
	if evil == string(src) {
		t.Fatal("the spec no longer has the persistence line this test edits")
	}
	spec, err := keyspec.Parse("keyspec.yaml", []byte(evil))
	if err != nil {
		t.Fatal(err)
	}
	out, err := serverconf.Render(spec, spec.Instance("vm1"), serverconf.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "enable-debug-command yes") || strings.HasPrefix(line, "protected-mode no") {
			t.Fatalf("spec text became a directive: %q", line)
		}
	}
}
