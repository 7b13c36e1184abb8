package serverconf_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
)

// fixture is the tool's own small spec (HAN's configs are checked in
// tests/han/serverconf).
const fixture = "../testdata/small/keyspec.yaml"

// withServer is the fixture with a server section on instance a, which luagen
// config requires.
func withServer(t *testing.T) *keyspec.Spec {
	t.Helper()
	src, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), "    topology: standalone\n", "    topology: standalone\n    server:\n      persistence: {mode: none, source: a cache}\n      eviction: {policy: allkeys-lru, reason: every key is a cache entry}\n", 1)
	spec, err := keyspec.Parse("keyspec.yaml", []byte(edited))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestPublicBindIsRefused(t *testing.T) {
	spec := withServer(t)
	for _, bind := range []string{"0.0.0.0", "203.0.113.5", "127.0.0.1 8.8.8.8", "::"} {
		o := serverconf.DefaultOptions
		o.Bind = bind
		if _, err := serverconf.Render(spec, spec.Instance("a"), o); err == nil {
			t.Errorf("bind %q accepted", bind)
		}
	}
	for _, bind := range []string{"10.0.3.4", "172.16.0.9 127.0.0.1", "192.168.1.2", "-::1"} {
		o := serverconf.DefaultOptions
		o.Bind = bind
		if _, err := serverconf.Render(spec, spec.Instance("a"), o); err != nil {
			t.Errorf("bind %q refused: %v", bind, err)
		}
	}
}

// Spec text (seeds, reasons) is folded into comments: it can never add a directive.
func TestSpecTextCannotInjectDirectives(t *testing.T) {
	src, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	evil := strings.Replace(string(src), "    topology: standalone\n", "    topology: standalone\n    server:\n      persistence: {mode: aof_everysec, source: \"x\\nenable-debug-command yes\\nprotected-mode no\\nthe source\"}\n      eviction: {policy: noeviction, reason: \"r\\nrename-command FLUSHALL \\\"\\\"\"}\n", 1)
	if evil == string(src) {
		t.Fatal("the fixture no longer has the topology line this test edits")
	}
	spec, err := keyspec.Parse("keyspec.yaml", []byte(evil))
	if err != nil {
		t.Fatal(err)
	}
	out, err := serverconf.Render(spec, spec.Instance("a"), serverconf.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "enable-debug-command yes") || strings.HasPrefix(line, "protected-mode no") || strings.HasPrefix(line, "rename-command") {
			t.Fatalf("spec text became a directive: %q", line)
		}
	}
}
