package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/hanchat/luagen/gen/sizing"
)

// sizingCommand measures representative keys of an instance on a scratch
// redis-server and prints the memory a cardinality file implies.
type sizingCommand struct {
	inputs
	file, format, redisServer string
}

func (c *sizingCommand) declare(fs *flag.FlagSet) {
	c.declareInputs(fs, withLua|withInstance)
	fs.StringVar(&c.file, "file", "", "the cardinality file (default: sizing/<instance>.yaml beside the spec)")
	fs.StringVar(&c.format, "format", "text", "text or json")
	fs.StringVar(&c.redisServer, "redis-server", "redis-server", "the redis-server binary of the scratch server")
}

func (c *sizingCommand) run(fs *flag.FlagSet, stdout, stderr io.Writer) int {
	if !c.requireInstance(fs, stderr) {
		return exitUsage
	}
	if c.format != "text" && c.format != "json" {
		fmt.Fprintf(stderr, "luagen sizing: --format %q: want text or json\n", c.format)
		return exitUsage
	}
	if c.file == "" {
		c.file = filepath.Join(filepath.Dir(c.spec), "sizing", c.instance+".yaml")
	}
	spec, in, code := c.loadInstance(stderr)
	if in == nil {
		return code
	}
	f, err := sizing.Load(c.file, spec)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	if f.Instance != in {
		fmt.Fprintf(stderr, "%s: the file sizes instance %s, not %s\n", c.file, f.Instance.Name, in.Name)
		return exitProblem
	}
	if err := f.Complete(spec); err != nil {
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	srcs, ok := c.loadLua(spec, stderr)
	if !ok {
		return exitProblem
	}
	r, err := sizing.Measure(context.Background(), spec, srcs, f, sizing.Options{RedisServer: c.redisServer})
	if err != nil {
		var list sizing.List
		if !errors.As(err, &list) {
			err = fmt.Errorf("luagen sizing: %w", err)
		}
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	if c.format == "json" {
		err = r.JSON(stdout)
	} else {
		err = r.Text(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "luagen sizing: %v\n", err)
		return exitProblem
	}
	return exitOK
}
