package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/hanchat/luagen/gen/sizing"
)

// runSizing measures representative keys of an instance on a scratch
// redis-server and prints the memory a cardinality file implies.
func runSizing(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("sizing", stderr)
	specPath := specFlag(fs)
	luaDir := luaFlag(fs)
	instance := instanceFlag(fs)
	file := fs.String("file", "", "the cardinality file (default: sizing/<instance>.yaml beside the spec)")
	format := fs.String("format", "text", "text or json")
	server := fs.String("redis-server", "redis-server", "the redis-server binary of the scratch server")
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if !required(fs, stderr, "instance", *instance, "") {
		return exitUsage
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "luagen sizing: --format %q: want text or json\n", *format)
		return exitUsage
	}
	if *file == "" {
		*file = filepath.Join(filepath.Dir(*specPath), "sizing", *instance+".yaml")
	}
	spec, in, code := loadInstance(*specPath, *instance, stderr)
	if in == nil {
		return code
	}
	f, err := sizing.Load(*file, spec)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	if f.Instance != in {
		fmt.Fprintf(stderr, "%s: the file sizes instance %s, not %s\n", *file, f.Instance.Name, in.Name)
		return exitProblem
	}
	if err := f.Complete(spec); err != nil {
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	srcs, ok := loadLua(spec, *luaDir, stderr)
	if !ok {
		return exitProblem
	}
	r, err := sizing.Measure(context.Background(), spec, srcs, f, sizing.Options{RedisServer: *server})
	if err != nil {
		var list sizing.List
		if !errors.As(err, &list) {
			err = fmt.Errorf("luagen sizing: %w", err)
		}
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	if *format == "json" {
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
