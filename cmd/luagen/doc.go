package main

import (
	"fmt"
	"io"

	"github.com/hanchat/luagen/gen/catalog"
	"github.com/hanchat/luagen/gen/keyspec"
)

// runDoc writes the keyspace catalogue, one static HTML page.
func runDoc(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("doc", stderr)
	specPath := specFlag(fs)
	luaDir := luaFlag(fs)
	out := fs.String("out", "", "the directory to write index.html into (required)")
	var instances multi
	fs.Var(&instances, "instance", "show only this instance (repeatable)")
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if !required(fs, stderr, "out", *out, " (the directory index.html goes into)") {
		return exitUsage
	}
	spec, err := keyspec.Load(*specPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	for _, name := range instances {
		if spec.Instance(name) == nil {
			fmt.Fprintf(stderr, "luagen doc: --instance %s: %s declares no such instance\n", name, *specPath)
			return exitUsage
		}
	}
	srcs, ok := loadLua(spec, *luaDir, stderr)
	if !ok {
		return exitProblem
	}
	path, err := catalog.Write(*out, spec, srcs, catalog.Options{Instances: instances})
	if err != nil {
		fmt.Fprintf(stderr, "luagen doc: %v\n", err)
		return exitProblem
	}
	fmt.Fprintf(stdout, "luagen: %s\n", path)
	return exitOK
}
