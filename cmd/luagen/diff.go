package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/hanchat/luagen/gen/diff"
)

// runDiff prints what changed since an older revision for a reviewer:
// scripts' commands and key access, and the aclfile lines that change.
func runDiff(args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseComparisonFlags("diff", args, stderr, "markdown (for a pull request comment, the default) or json")
	if !ok {
		return code
	}
	if f.format != "" && f.format != "markdown" && f.format != "json" {
		fmt.Fprintf(stderr, "luagen diff: --format %q: want markdown or json\n", f.format)
		return exitUsage
	}
	old, cur, code, ok := f.load("diff", stderr)
	if !ok {
		return code
	}
	old.Label = f.against
	r := diff.Compare(old, cur)
	if f.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "luagen diff: %v\n", err)
			return exitProblem
		}
		return exitOK
	}
	fmt.Fprint(stdout, r.Markdown())
	return exitOK
}
