package main

import (
	"flag"
	"io"

	"github.com/hanchat/luagen/docs"
)

// schemaFile is the name luagen init gives the JSON Schema it writes beside
// the spec, and the one the spec's yaml-language-server comment names.
const schemaFile = "keyspec.schema.json"

// schemaCommand prints the JSON Schema of keyspec.yaml, the one this luagen
// reads: luagen schema > keyspec.schema.json refreshes the copy luagen init
// wrote.
type schemaCommand struct{}

func (schemaCommand) declare(*flag.FlagSet) {}

func (schemaCommand) run(_ *flag.FlagSet, stdout, _ io.Writer) int {
	if _, err := stdout.Write(docs.KeyspecSchema); err != nil {
		return exitProblem
	}
	return exitOK
}
