package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hanchat/luagen/gen/breaking"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/snapshot"
)

// comparisonCommand is a command that compares the working tree with an
// older revision (breaking, diff): its flags, both revisions read, then its
// report of them.
type comparisonCommand struct {
	inputs
	name, against, format string
	// formats are the values --format takes, the default first; help
	// describes them.
	formats []string
	help    string
	report  func(c *comparisonCommand, old, cur *snapshot.Snapshot, stdout, stderr io.Writer) int
}

// comparison makes the comparison command name: its report, and the values
// --format takes (the default first) with help describing them.
func comparison(name string, report func(c *comparisonCommand, old, cur *snapshot.Snapshot, stdout, stderr io.Writer) int, help string, formats ...string) func() command {
	return func() command {
		return &comparisonCommand{name: name, formats: formats, help: help, report: report}
	}
}

func (c *comparisonCommand) declare(fs *flag.FlagSet) {
	c.declareInputs(fs, withLua)
	fs.StringVar(&c.against, "against", "", "the older revision (required): a git revision of the spec's repository (HEAD~1, main, a tag), a directory holding the older spec and lua/, or an older spec file (its lua/ beside it)")
	fs.StringVar(&c.format, "format", "", "the output: "+c.help)
}

func (c *comparisonCommand) run(fs *flag.FlagSet, stdout, stderr io.Writer) int {
	if !required(fs, stderr, "against", c.against, " (a git revision such as HEAD~1, or a directory holding the older spec)") {
		return exitUsage
	}
	if c.format != "" && !slices.Contains(c.formats, c.format) {
		fmt.Fprintf(stderr, "luagen %s: --format %q: want %s\n", c.name, c.format, strings.Join(c.formats, " or "))
		return exitUsage
	}
	old, cur, code, ok := c.load(stderr)
	if !ok {
		return code
	}
	return c.report(c, old, cur, stdout, stderr)
}

// writeJSON prints v as indented JSON, HTML left unescaped.
func writeJSON(name string, stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "luagen %s: %v\n", name, err)
		return exitProblem
	}
	return exitOK
}

// load reads both revisions. A revision that cannot be read (an unknown ref,
// no git, no spec there) is a usage error; an invalid spec on either side is a
// problem found (exit 1), as for every command.
func (c *comparisonCommand) load(stderr io.Writer) (old, cur *snapshot.Snapshot, code int, ok bool) {
	// The two revisions are read side by side (git, parsing, compiling).
	type loaded struct {
		s   *snapshot.Snapshot
		err error
	}
	working := make(chan loaded, 1)
	go func() {
		s, err := snapshot.Working(c.spec, c.lua)
		working <- loaded{s, err}
	}()
	old, err := snapshot.At(context.Background(), c.against, c.spec, c.lua)
	w := <-working
	if w.err != nil {
		fmt.Fprintln(stderr, w.err)
		return nil, nil, exitProblem, false
	}
	cur = w.s
	switch {
	case errors.Is(err, snapshot.ErrNoGit), errors.Is(err, snapshot.ErrNotRepository), errors.Is(err, snapshot.ErrUnknownRevision),
		errors.Is(err, snapshot.ErrShallow), errors.Is(err, snapshot.ErrNoSpec):
		fmt.Fprintf(stderr, "luagen %s: %v\n", c.name, err)
		return nil, nil, exitUsage, false
	case errors.Is(err, keyspec.ErrInvalid):
		fmt.Fprintln(stderr, err)
		fmt.Fprintf(stderr, "luagen %s: the older revision %s does not parse with this luagen (above): compare against a later one\n", c.name, c.against)
		return nil, nil, exitProblem, false
	case err != nil:
		fmt.Fprintf(stderr, "luagen %s: %v\n", c.name, err)
		return nil, nil, exitProblem, false
	}
	return old, cur, 0, true
}

// reportBreaking reports what changed since --against that breaks stored
// data, a rolling deploy or ACL grants.
func reportBreaking(c *comparisonCommand, old, cur *snapshot.Snapshot, stdout, stderr io.Writer) int {
	findings, err := breaking.Compare(old, cur)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	if c.format == "json" {
		if findings == nil {
			findings = []breaking.Finding{}
		}
		if code := writeJSON("breaking", stdout, stderr, findings); code != exitOK {
			return code
		}
	} else {
		for _, fd := range findings {
			if fd.Ignored == "" {
				fmt.Fprintln(stdout, fd)
			}
		}
	}
	s := breaking.Summarize(findings)
	fmt.Fprintf(stderr, "luagen breaking: against %s: %d breaking, %d warnings, %d accepted by breaking: ignore\n", c.against, s.Failing, s.Warnings, s.Ignored)
	if s.Failing > 0 {
		return exitProblem
	}
	return exitOK
}
