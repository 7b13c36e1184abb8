package main

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hanchat/luagen/docs"
)

// luagen version prints the luagen module's version, its replacement and the
// VCS stamp as the Go toolchain recorded them, whether luagen is the main
// module (a build in its checkout) or a dependency of a module that uses it
// as a tool; it always exits 0.
func TestVersionText(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: luagenModule, Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "3f1c2a7e9b0d"}, {Key: "vcs.time", Value: "2026-12-01T23:40:12Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionText(stamped), "luagen github.com/hanchat/luagen (devel)\ngo go1.26.8\nrevision 3f1c2a7e9b0d 2026-12-01T23:40:12Z (modified)\n"; got != want {
		t.Errorf("a stamped build:\n%s\nwant:\n%s", got, want)
	}
	clean := *stamped
	clean.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: "3f1c2a7e9b0d"}, {Key: "vcs.modified", Value: "false"}}
	if got := versionText(&clean); !strings.Contains(got, "revision 3f1c2a7e9b0d\n") {
		t.Errorf("a clean work tree:\n%s", got)
	}
	asDependency := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/shop"},
		Deps: []*debug.Module{{Path: "github.com/redis/go-redis/v9", Version: "v9.23.0"},
			{Path: luagenModule, Version: "v1.4.0", Sum: "h1:x"}}}
	if got, want := versionText(asDependency), "luagen github.com/hanchat/luagen v1.4.0\ngo go1.26.8\n"; got != want {
		t.Errorf("luagen as a dependency:\n%s\nwant:\n%s", got, want)
	}
	replaced := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: luagenModule, Version: replacedVersion,
		Replace: &debug.Module{Path: "/src/luagen", Version: "(devel)"}}}
	if got := versionText(replaced); !strings.HasPrefix(got, "luagen github.com/hanchat/luagen "+replacedVersion+"\nreplaced by /src/luagen (devel)\n") ||
		!strings.Contains(got, "revision unknown (") {
		t.Errorf("luagen through a replace:\n%s", got)
	}

	code, stdout, stderr := luagen(t, "", "version")
	if code != 0 || !strings.HasPrefix(stdout, "luagen github.com/hanchat/luagen ") || stderr != "" {
		t.Fatalf("luagen version: %d %q %q", code, stdout, stderr)
	}
	if code, _, _ := luagen(t, "", "version", "extra"); code != 2 {
		t.Fatalf("luagen version extra: exit %d, want 2", code)
	}
}

// luagen schema prints the spec's JSON Schema, docs/keyspec.schema.json.
func TestSchemaPrintsTheSpecSchema(t *testing.T) {
	code, stdout, _ := luagen(t, "", "schema")
	if code != 0 || stdout != string(docs.KeyspecSchema) || !strings.Contains(stdout, `"title": "luagen keyspec.yaml"`) {
		t.Fatalf("luagen schema: %d, %d bytes", code, len(stdout))
	}
}

// go.mod as luagen reads it: module, require, replace and tool directives in
// their one-line and block forms, comments ignored.
func TestParseGoMod(t *testing.T) {
	m := parseGoMod([]byte(`module example.com/shop // the shop

go 1.26.0

require github.com/redis/go-redis/v9 v9.23.0

require (
	github.com/hanchat/luagen v0.0.0-00010101000000-000000000000
	github.com/yuin/gopher-lua v1.1.2 // indirect
)

replace github.com/hanchat/luagen => ../luagen

tool (
	github.com/hanchat/luagen/cmd/luagen
)
`))
	if m.module != "example.com/shop" || !m.requires["github.com/redis/go-redis/v9"] || !m.requires[luagenModule] ||
		!m.requires["github.com/yuin/gopher-lua"] || !m.replaces[luagenModule] || !m.tools[luagenTool] || m.requires["go"] || len(m.requires) != 3 {
		t.Fatalf("%+v", m)
	}
	if m := parseGoMod([]byte("module x\ntool github.com/hanchat/luagen/cmd/luagen\n")); !m.tools[luagenTool] || len(m.replaces) != 0 {
		t.Fatalf("one-line tool: %+v", m)
	}
}

// init's next steps: the cd quoted for a shell when the directory needs it,
// the install first when go.mod has no tool directive (by go mod edit when it
// replaces luagen by a checkout), and a user's own go:generate line named.
func TestNextSteps(t *testing.T) {
	withTool := parseGoMod([]byte("module x\ntool github.com/hanchat/luagen/cmd/luagen\n"))
	if got, want := nextSteps("my shop", withTool, false), "next steps (go generate runs go tool luagen generate, from generate.go):\n  cd 'my shop'\n  go generate ./...\n  go mod tidy\n  go test ./...\n"; got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := nextSteps("./", withTool, true); !strings.HasPrefix(got, "next steps (go generate runs your go:generate line for luagen generate):\n  go generate ./...\n") {
		t.Errorf("in place, wired:\n%s", got)
	}
	if got := nextSteps(".", parseGoMod([]byte("module x\n")), false); !strings.Contains(got, "\n  go get -tool github.com/hanchat/luagen/cmd/luagen\n  go generate ./...\n") {
		t.Errorf("no tool directive:\n%s", got)
	}
	if got := nextSteps(".", nil, false); !strings.Contains(got, "\n  go get -tool ") {
		t.Errorf("no go.mod read:\n%s", got)
	}
	if got := shellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("shellQuote: %s", got)
	}
}
