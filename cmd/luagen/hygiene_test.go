package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A script flagged allow-oom (which let one write 8 MB past a 2.9 MB maxmemory,
// issue 12) is refused by generate, check and acl at its file:line; no wrapper
// and no grant comes from it.
func TestAllowOOMIsRefused(t *testing.T) {
	dir := workspace(t)
	path := filepath.Join(dir, "lua", "vm1", "idem_release.lua")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("#!lua flags=allow-oom\n"), orig...), 0o644); err != nil {
		t.Fatal(err)
	}
	want := path + ":1: shebang flag allow-oom"
	for _, args := range [][]string{
		{"generate"},
		{"check"},
		{"acl", "--spec", filepath.Join(dir, "keyspec.yaml"), "--lua", filepath.Join(dir, "lua"), "--instance", "vm1"},
	} {
		wd := dir
		if args[0] == "acl" {
			wd = ""
		}
		code, stdout, stderr := luagen(t, wd, args...)
		if code != 1 || !strings.Contains(stderr, want) || strings.Contains(stdout, "user ") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant %s", args[0], code, stderr, want)
		}
	}
}
