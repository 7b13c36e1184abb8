package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hanchat/luagen/gen/cover"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/luatest/coverprofile"
)

// runCover reports the Lua coverage the tests recorded (LUAGEN_COVER=DIR).
func runCover(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("cover", stderr)
	specPath := specFlag(fs)
	luaDir := luaFlag(fs)
	profile := fs.String("profile", "", "the directory go test wrote the coverage into with LUAGEN_COVER=DIR (required)")
	htmlOut := fs.String("html", "", "also write the Lua with hit counts as one HTML page to this file")
	check := fs.Bool("check", false, "exit 1 when an instance's scripts are below its coverage_floor")
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if !required(fs, stderr, "profile", *profile, ": the directory of LUAGEN_COVER=DIR go test ./...") {
		return exitUsage
	}
	if fi, err := os.Stat(*profile); err != nil || !fi.IsDir() {
		fmt.Fprintf(stderr, "luagen cover: --profile %s: not a directory (record with LUAGEN_COVER=%s go test ./...)\n", *profile, *profile)
		return exitUsage
	}
	spec, err := keyspec.Load(*specPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	srcs, ok := loadLua(spec, *luaDir, stderr)
	if !ok {
		return exitProblem
	}
	p, err := coverprofile.Read(*profile)
	if err != nil {
		fmt.Fprintf(stderr, "luagen cover: %v\n", err)
		return exitProblem
	}
	r, err := cover.Build(spec, srcs, p)
	if err != nil {
		fmt.Fprintf(stderr, "luagen cover: %v\n", err)
		return exitProblem
	}
	fmt.Fprint(stdout, r.Text())
	if *htmlOut != "" {
		page, err := r.HTML()
		if err == nil {
			err = os.WriteFile(*htmlOut, page, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "luagen cover: --html: %v\n", err)
			return exitProblem
		}
	}
	if !*check {
		return exitOK
	}
	findings := r.Check()
	for _, f := range findings {
		fmt.Fprintln(stderr, f)
	}
	if len(findings) > 0 {
		return exitProblem
	}
	fmt.Fprintln(stderr, "luagen cover: every instance is at or above its coverage_floor")
	return exitOK
}
