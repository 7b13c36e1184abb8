package main

import (
	"fmt"
	"io"

	"github.com/hanchat/luagen/gen/diff"
	"github.com/hanchat/luagen/gen/snapshot"
)

// reportDiff prints what changed since an older revision for a reviewer:
// scripts' commands and key access, and the aclfile lines that change.
func reportDiff(c *comparisonCommand, old, cur *snapshot.Snapshot, stdout, stderr io.Writer) int {
	old.Label = c.against
	r := diff.Compare(old, cur)
	if c.format == "json" {
		return writeJSON("diff", stdout, stderr, r)
	}
	fmt.Fprint(stdout, r.Markdown())
	return exitOK
}
