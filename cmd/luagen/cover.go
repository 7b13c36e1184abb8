package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hanchat/luagen/gen/cover"
	"github.com/hanchat/luagen/luatest/coverprofile"
)

// coverCommand reports the Lua coverage the tests recorded (LUAGEN_COVER=DIR).
type coverCommand struct {
	inputs
	profile, htmlOut string
	check            bool
}

func (c *coverCommand) declare(fs *flag.FlagSet) {
	c.declareInputs(fs, withLua)
	fs.StringVar(&c.profile, "profile", "", "the directory go test wrote the coverage into with LUAGEN_COVER=DIR (required)")
	fs.StringVar(&c.htmlOut, "html", "", "also write the Lua with hit counts as one HTML page to this file")
	fs.BoolVar(&c.check, "check", false, "exit 1 when an instance's scripts are below its coverage_floor")
}

func (c *coverCommand) run(fs *flag.FlagSet, stdout, stderr io.Writer) int {
	if !required(fs, stderr, "profile", c.profile, ": the directory of LUAGEN_COVER=DIR go test ./...") {
		return exitUsage
	}
	if fi, err := os.Stat(c.profile); err != nil || !fi.IsDir() {
		fmt.Fprintf(stderr, "luagen cover: --profile %s: not a directory (record with LUAGEN_COVER=%s go test ./...)\n", c.profile, c.profile)
		return exitUsage
	}
	spec, ok := c.loadSpec(stderr)
	if !ok {
		return exitProblem
	}
	srcs, ok := c.loadLua(spec, stderr)
	if !ok {
		return exitProblem
	}
	p, err := coverprofile.Read(c.profile)
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
	if c.htmlOut != "" {
		page, err := r.HTML()
		if err == nil {
			err = os.WriteFile(c.htmlOut, page, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "luagen cover: --html: %v\n", err)
			return exitProblem
		}
	}
	if !c.check {
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
