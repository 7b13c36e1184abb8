package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hanchat/luagen/gen/breaking"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/snapshot"
)

// comparisonFlags are the flags of the commands that compare the working tree
// with an older revision (breaking, diff).
type comparisonFlags struct {
	spec, lua, against, format string
}

// parseComparisonFlags parses the flags of breaking and diff; formats are the
// values --format takes, the default first, and help describes them.
func parseComparisonFlags(name string, args []string, stderr io.Writer, formats []string, help string) (*comparisonFlags, int, bool) {
	fs := newFlags(name, stderr)
	f := &comparisonFlags{}
	specVar(fs, &f.spec)
	luaVar(fs, &f.lua)
	fs.StringVar(&f.against, "against", "", "the older revision (required): a git revision of the spec's repository (HEAD~1, main, a tag), a directory holding the older spec and lua/, or an older spec file (its lua/ beside it)")
	fs.StringVar(&f.format, "format", "", "the output: "+help)
	if code, ok := parse(fs, args, stderr); !ok {
		return nil, code, false
	}
	if !required(fs, stderr, "against", f.against, " (a git revision such as HEAD~1, or a directory holding the older spec)") {
		return nil, exitUsage, false
	}
	if f.format != "" && !slices.Contains(formats, f.format) {
		fmt.Fprintf(stderr, "luagen %s: --format %q: want %s\n", name, f.format, strings.Join(formats, " or "))
		return nil, exitUsage, false
	}
	return f, 0, true
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
func (f *comparisonFlags) load(name string, stderr io.Writer) (old, cur *snapshot.Snapshot, code int, ok bool) {
	// The two revisions are read side by side (git, parsing, compiling).
	type loaded struct {
		s   *snapshot.Snapshot
		err error
	}
	working := make(chan loaded, 1)
	go func() {
		s, err := snapshot.Working(f.spec, f.lua)
		working <- loaded{s, err}
	}()
	old, err := snapshot.At(context.Background(), f.against, f.spec, f.lua)
	w := <-working
	if w.err != nil {
		fmt.Fprintln(stderr, w.err)
		return nil, nil, exitProblem, false
	}
	cur = w.s
	switch {
	case errors.Is(err, snapshot.ErrNoGit), errors.Is(err, snapshot.ErrNotRepository), errors.Is(err, snapshot.ErrUnknownRevision),
		errors.Is(err, snapshot.ErrShallow), errors.Is(err, snapshot.ErrNoSpec):
		fmt.Fprintf(stderr, "luagen %s: %v\n", name, err)
		return nil, nil, exitUsage, false
	case errors.Is(err, keyspec.ErrInvalid):
		fmt.Fprintln(stderr, err)
		fmt.Fprintf(stderr, "luagen %s: the older revision %s does not parse with this luagen (above): compare against a later one\n", name, f.against)
		return nil, nil, exitProblem, false
	case err != nil:
		fmt.Fprintf(stderr, "luagen %s: %v\n", name, err)
		return nil, nil, exitProblem, false
	}
	return old, cur, 0, true
}

func runBreaking(args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseComparisonFlags("breaking", args, stderr, []string{"text", "json"}, "text (FILE:LINE: rule: message [category], the default) or json")
	if !ok {
		return code
	}
	old, cur, code, ok := f.load("breaking", stderr)
	if !ok {
		return code
	}
	findings, err := breaking.Compare(old, cur)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	if f.format == "json" {
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
	fmt.Fprintf(stderr, "luagen breaking: against %s: %d breaking, %d warnings, %d accepted by breaking: ignore\n", f.against, s.Failing, s.Warnings, s.Ignored)
	if s.Failing > 0 {
		return exitProblem
	}
	return exitOK
}
