package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/hanchat/luagen/gen/catalog"
)

// docCommand writes the keyspace catalogue, one static HTML page.
type docCommand struct {
	inputs
	out       string
	instances multi
}

func (c *docCommand) declare(fs *flag.FlagSet) {
	c.declareInputs(fs, withLua)
	fs.StringVar(&c.out, "out", "", "the directory to write index.html into (required)")
	fs.Var(&c.instances, "instance", "show only this instance (repeatable)")
}

func (c *docCommand) run(fs *flag.FlagSet, stdout, stderr io.Writer) int {
	if !required(fs, stderr, "out", c.out, " (the directory index.html goes into)") {
		return exitUsage
	}
	spec, ok := c.loadSpec(stderr)
	if !ok {
		return exitProblem
	}
	for _, name := range c.instances {
		if spec.Instance(name) == nil {
			fmt.Fprintf(stderr, "luagen doc: --instance %s: %s declares no such instance\n", name, c.spec)
			return exitUsage
		}
	}
	srcs, ok := c.loadLua(spec, stderr)
	if !ok {
		return exitProblem
	}
	path, err := catalog.Write(c.out, spec, srcs, catalog.Options{Instances: c.instances})
	if err != nil {
		fmt.Fprintf(stderr, "luagen doc: %v\n", err)
		return exitProblem
	}
	fmt.Fprintf(stdout, "luagen: %s\n", path)
	return exitOK
}
