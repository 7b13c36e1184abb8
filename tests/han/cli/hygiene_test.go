package cli

import (
	"fmt"
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

// A script file that is a symbolic link, or in an instance directory that is
// one, is refused by generate, check, acl and lint at the script's line in the
// spec, and nothing of the link's target (here a file outside lua/) reaches the
// generated Go or the aclfile (issue 12: the link was followed, and the file
// outside lua/ was embedded).
func TestSymlinkedScriptsAreRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.lua")
	const marker = "OUTSIDE_THE_TREE_7c1e"
	if err := os.WriteFile(outside, []byte("-- "+marker+"\nredis.call('DEL', KEYS[2])\nreturn 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	specLine := func(dir, entry string) string {
		b, err := os.ReadFile(filepath.Join(dir, "keyspec.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if l == "  "+entry+":" {
				return fmt.Sprintf("keyspec.yaml:%d: script %q: ", i+1, entry)
			}
		}
		t.Fatalf("no script %s in the spec", entry)
		return ""
	}
	for name, link := range map[string]func(dir string) string{
		"file": func(dir string) string {
			p := filepath.Join(dir, "lua", "vm1", "idem_release.lua")
			os.Remove(p)
			if err := os.Symlink(outside, p); err != nil {
				t.Fatal(err)
			}
			return "vm1/idem_release.lua is a symbolic link"
		},
		"directory": func(dir string) string {
			real := filepath.Join(t.TempDir(), "vm2")
			copyTree(t, filepath.Join(dir, "lua", "vm2"), real)
			os.RemoveAll(filepath.Join(dir, "lua", "vm2"))
			if err := os.Symlink(real, filepath.Join(dir, "lua", "vm2")); err != nil {
				t.Fatal(err)
			}
			return "vm2 is a symbolic link"
		},
	} {
		dir := workspace(t)
		if code, _, stderr := luagen(t, dir, "generate"); code != 0 {
			t.Fatalf("%s: generate before the link: %s", name, stderr)
		}
		want := link(dir)
		entry := "idem_release"
		_ = os.RemoveAll(filepath.Join(dir, "generated"))
		for _, args := range [][]string{{"generate"}, {"check"}, {"lint"}} {
			code, stdout, stderr := luagen(t, dir, args...)
			if code != 1 || !strings.Contains(stdout+stderr, want) {
				t.Errorf("%s: %s: exit %d\n%s%s\nwant %s", name, args[0], code, stdout, stderr, want)
			}
		}
		code, stdout, stderr := luagen(t, "", "acl", "--spec", filepath.Join(dir, "keyspec.yaml"), "--lua", filepath.Join(dir, "lua"), "--instance", strings.Split(want, "/")[0][:3])
		if code != 1 || stdout != "" || !strings.Contains(stderr, want) {
			t.Errorf("%s: acl: exit %d\n%s%s", name, code, stdout, stderr)
		}
		if name == "file" && !strings.Contains(stderr, specLine(dir, entry)+filepath.Join(dir, "lua", "vm1", "idem_release.lua")) {
			t.Errorf("%s: acl does not name the script's line: %s", name, stderr)
		}
		filepath.WalkDir(filepath.Join(dir, "generated"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), marker) {
					t.Errorf("%s: %s embeds the link's target", name, p)
				}
			}
			return nil
		})
	}
}
