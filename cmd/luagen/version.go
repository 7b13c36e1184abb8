package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// versionCommand prints luagen's module version and, when the binary was
// built from a Git checkout with VCS stamping on, the revision, its time and
// whether the work tree had changes: what a bug report needs to name the
// build.
type versionCommand struct{}

func (versionCommand) declare(*flag.FlagSet) {}

func (versionCommand) run(_ *flag.FlagSet, stdout, _ io.Writer) int {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(stdout, "luagen (no build information: a binary built without module support)")
		return exitOK
	}
	fmt.Fprint(stdout, versionText(info))
	return exitOK
}

// luagenModule is the path of luagen's own module, whose version the tool reports.
const luagenModule = "github.com/hanchat/luagen"

// versionText is what luagen version prints for a build: the luagen module's
// version as the Go toolchain recorded it ("(devel)" for a build inside a
// checkout, v0.0.0-00010101000000-000000000000 through a replace directive, a
// tag or pseudo-version from the module proxy), the replacement directory when
// there is one, the Go version, and the vcs.* settings when they were stamped.
func versionText(info *debug.BuildInfo) string {
	var b strings.Builder
	mod := &info.Main
	if info.Main.Path != luagenModule {
		// luagen run as a tool of another module (go tool luagen): its
		// version is that of the dependency.
		for _, d := range info.Deps {
			if d.Path == luagenModule {
				mod = d
				break
			}
		}
	}
	version := mod.Version
	if version == "" {
		version = "(unknown)"
	}
	fmt.Fprintf(&b, "luagen %s %s\n", luagenModule, version)
	if mod.Replace != nil {
		fmt.Fprintf(&b, "replaced by %s %s\n", mod.Replace.Path, mod.Replace.Version)
	}
	fmt.Fprintf(&b, "go %s\n", info.GoVersion)
	vcs := map[string]string{}
	for _, s := range info.Settings {
		if strings.HasPrefix(s.Key, "vcs") {
			vcs[s.Key] = s.Value
		}
	}
	if rev := vcs["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "revision %s", rev)
		if t := vcs["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " %s", t)
		}
		if vcs["vcs.modified"] == "true" {
			b.WriteString(" (modified)")
		}
		b.WriteString("\n")
	} else if mod == &info.Main {
		b.WriteString("revision unknown (the go command stamps it only in go build or go install inside a Git checkout of luagen, without -buildvcs=false; go run and go tool do not)\n")
	}
	return b.String()
}
