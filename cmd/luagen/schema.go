package main

import (
	"flag"
	"io"

	"github.com/hanchat/luagen/docs"
)

// schemaFile is the name luagen init gives the JSON Schema it writes beside
// the spec, and the one the spec's yaml-language-server comment names.
const schemaFile = "keyspec.schema.json"

// runSchema prints the JSON Schema of keyspec.yaml, the one this luagen reads:
// luagen schema > keyspec.schema.json refreshes the copy luagen init wrote.
func runSchema(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("luagen schema", flag.ContinueOnError)
	fset.SetOutput(stderr)
	if code, ok := parse(fset, args, stderr); !ok {
		return code
	}
	if _, err := stdout.Write(docs.KeyspecSchema); err != nil {
		return exitProblem
	}
	return exitOK
}
