package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bypassDir holds the compiler's bypass fixtures: a spec, and per fixture a
// script and the exact answer of luagen generate.
const bypassDir = "../../gen/compiler/testdata/bypass"

// bypassWorkspace writes the bypass spec and one fixture as lua/a/s.lua into a
// temporary directory and makes it the working directory, so the CLI names
// files the way the fixtures' .want files do.
func bypassWorkspace(t *testing.T, spec, script []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lua", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keyspec.yaml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lua", "a", "s.lua"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
}

var bypassFlags = []string{"--spec", "keyspec.yaml", "--lua", "lua"}

// Each bypass is refused by luagen generate and luagen check with exactly the
// compiler's file:line and message, nothing is written, luagen lint names it,
// and luagen acl refuses it with no aclfile on stdout. The fixtures of the
// derived-key spec (bypass_derived) and of the data-key, loop and recursion
// spec (bypass_data) go through the same steps.
func TestGenerateAndACLRefuseEveryBypass(t *testing.T) {
	for _, dir := range []string{bypassDir, bypassDir + "_derived", bypassDir + "_data"} {
		spec, err := os.ReadFile(filepath.Join(dir, "keyspec.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.lua"))
		if len(files) < 10 {
			t.Fatalf("%s: only %d fixtures", dir, len(files))
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".lua")
			script, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".lua") + ".want")
			if err != nil {
				t.Fatal(err)
			}
			t.Run(filepath.Base(dir)+"/"+name, func(t *testing.T) {
				bypassWorkspace(t, spec, script)
				gen := append([]string{"generate"}, append(bypassFlags, "--out", "generated")...)
				acl := append([]string{"acl", "--instance", "a"}, bypassFlags...)
				lint := append([]string{"lint"}, bypassFlags...)
				if name == "accepted" {
					if code, _, stderr := luagen(t, "", gen...); code != 0 {
						t.Fatalf("generate: %d\n%s", code, stderr)
					}
					code, stdout, stderr := luagen(t, "", acl...)
					grants := " +object|encoding "
					if strings.HasSuffix(dir, "_derived") || strings.HasSuffix(dir, "_data") {
						// The derived lock (or the dependencies set read from
						// data) is granted through its owner's prefix, the
						// channel as declared.
						grants = " ~t:* resetchannels &ev:* -@all "
					}
					if code != 0 || !strings.Contains(stdout, grants) || strings.Contains(stdout, "+object ") {
						t.Fatalf("acl: %d\n%s%s", code, stdout, stderr)
					}
					return
				}
				code, stdout, stderr := luagen(t, "", gen...)
				if code != 1 || stderr != string(want) || stdout != "" {
					t.Fatalf("generate exited %d\nstderr:\n%s\nwant:\n%s", code, stderr, want)
				}
				if _, err := os.Stat("generated"); !os.IsNotExist(err) {
					t.Fatalf("generate wrote generated/ for a refused script: %v", err)
				}
				check := append([]string{"check"}, append(bypassFlags, "--out", "generated")...)
				if code, _, stderr := luagen(t, "", check...); code != 1 || stderr != string(want) {
					t.Fatalf("check exited %d\n%s", code, stderr)
				}
				code, stdout, stderr = luagen(t, "", acl...)
				if code != 1 || stdout != "" || !strings.Contains(stderr, strings.TrimSpace(string(want))) {
					t.Fatalf("acl exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				code, stdout, _ = luagen(t, "", lint...)
				if code != 1 || !strings.Contains(stdout, "lua/a/s.lua:") && !strings.Contains(stdout, "keyspec.yaml:") {
					t.Fatalf("lint exited %d\n%s", code, stdout)
				}
			})
		}
	}
}

// extra_commands naming a command or subcommand Redis does not have is an error
// at its spec line for generate, and acl emits nothing.
func TestExtraCommandsAreCheckedAgainstRedis(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(bypassDir, "keyspec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(bypassDir, "accepted.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for command, want := range map[string]string{
		"xyzzy":          `keyspec.yaml:17: user "u": extra command "xyzzy": Redis 7.0.15 has no such command`,
		"script|nope":    `keyspec.yaml:17: user "u": extra command "script|nope": SCRIPT has no subcommand "nope" in Redis 7.0.15 (see COMMAND DOCS script)`,
		"client":         `keyspec.yaml:17: user "u": extra command "client" would grant all its subcommands, some never granted (client|kill, client|list, client|no-evict, client|pause, and 2 more): grant client|<subcommand>`,
		"script|flush":   `keyspec.yaml:17: user "u": extra command "script|flush" is never granted: it runs or manages scripts (@scripting); the generated ACL grants EVALSHA of the declared scripts itself, SCRIPT LOAD only to the loader user`,
		"info":           `keyspec.yaml:17: user "u": extra command "info" is never granted: in Redis's @dangerous ACL category`,
		"copy":           `keyspec.yaml:17: user "u": extra command "copy" is never granted: its DB option writes into another database, which no ACL rule can forbid`,
		"client|setname": "",
	} {
		t.Run(command, func(t *testing.T) {
			spec := strings.Replace(string(base), "      - {prefix: \"t:\", source: test}\n",
				"      - {prefix: \"t:\", source: test}\n    extra_commands:\n      - {command: \""+command+"\", reason: \"a test\"}\n", 1)
			bypassWorkspace(t, []byte(spec), script)
			gen := append([]string{"generate"}, append(bypassFlags, "--out", "generated")...)
			acl := append([]string{"acl", "--instance", "a"}, bypassFlags...)
			if want == "" {
				code, stdout, stderr := luagen(t, "", acl...)
				if code != 0 || !strings.Contains(stdout, " +client|setname ") {
					t.Fatalf("acl: %d\n%s%s", code, stdout, stderr)
				}
				return
			}
			if code, _, stderr := luagen(t, "", gen...); code != 1 || strings.TrimSpace(stderr) != want {
				t.Fatalf("generate exited %d\n%s\nwant:\n%s", code, stderr, want)
			}
			if code, stdout, stderr := luagen(t, "", acl...); code != 1 || stdout != "" || strings.TrimSpace(stderr) != want {
				t.Fatalf("acl exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
		})
	}
}
