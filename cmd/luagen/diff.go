package main

import (
	"fmt"
	"io"

	"github.com/hanchat/luagen/gen/diff"
)

// runDiff prints what changed since an older revision for a reviewer:
// scripts' commands and key access, and the aclfile lines that change.
func runDiff(args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseComparisonFlags("diff", args, stderr, []string{"markdown", "json"}, "markdown (for a pull request comment, the default) or json")
	if !ok {
		return code
	}
	old, cur, code, ok := f.load("diff", stderr)
	if !ok {
		return code
	}
	old.Label = f.against
	r := diff.Compare(old, cur)
	if f.format == "json" {
		return writeJSON("diff", stdout, stderr, r)
	}
	fmt.Fprint(stdout, r.Markdown())
	return exitOK
}
