// Package docs holds the project's documentation; its test keeps the
// requirements traceability table (requirements.md) honest.
package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Table rows have five cells: ID, section, requirement, proof, status.
var (
	rowID     = regexp.MustCompile(`^\d{3}\.\d+[a-z]$`)
	codeSpan  = regexp.MustCompile("`([^`]*)`")
	testRef   = regexp.MustCompile(`^([A-Za-z0-9_./-]+_test\.go):((?:Test|Fuzz)[A-Za-z0-9_]*)$`)
	statuses  = []string{"real server", "static", "harness only"}
	missingRe = regexp.MustCompile(`^missing( — .+)?$`)
)

// ref is one test a row names.
type ref struct {
	file, test string
}

// row is one requirement of the table, with its line in the file.
type row struct {
	line          int
	id, status    string
	refs          []ref
	badCodeSpans  []string
	cells         int
	requirementOK bool
}

// parseTable reads the rows of every table of md whose header starts with "| ID |".
func parseTable(md string) []row {
	var rows []row
	inTable := false
	for i, line := range strings.Split(md, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		if strings.HasPrefix(line, "| ID |") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		r := row{line: i + 1, cells: len(cells)}
		if len(cells) == 5 {
			r.id = strings.TrimSpace(cells[0])
			r.requirementOK = strings.TrimSpace(cells[2]) != ""
			r.status = strings.TrimSpace(cells[4])
			for _, m := range codeSpan.FindAllStringSubmatch(cells[3], -1) {
				if t := testRef.FindStringSubmatch(m[1]); t != nil {
					r.refs = append(r.refs, ref{file: t[1], test: t[2]})
				} else {
					r.badCodeSpans = append(r.badCodeSpans, m[1])
				}
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// testFuncs caches the top-level Test functions of each file.
type testFuncs map[string]map[string]bool

func (c testFuncs) has(root string, r ref) (bool, error) {
	funcs, ok := c[r.file]
	if !ok {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, filepath.FromSlash(r.file)), nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		funcs = map[string]bool{}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name] = true
			}
		}
		c[r.file] = funcs
	}
	return funcs[r.test], nil
}

// checkTable returns a problem for every row that is malformed, has an unknown
// status, names no test although it claims a proof, or names a test that does
// not exist under root. Each problem names the file's line.
func checkTable(name, md, root string) []string {
	var problems []string
	bad := func(r row, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", name, r.line, fmt.Sprintf(format, args...)))
	}
	seen := map[string]int{}
	cache := testFuncs{}
	rows := parseTable(md)
	if len(rows) == 0 {
		problems = append(problems, name+": no table rows")
	}
	for _, r := range rows {
		if r.cells != 5 {
			bad(r, "%d cells, want 5 (ID, section, requirement, proof, status)", r.cells)
			continue
		}
		if !rowID.MatchString(r.id) {
			bad(r, "ID %q: want seed.section plus a letter, e.g. 000.12b", r.id)
		}
		if prev, dup := seen[r.id]; dup {
			bad(r, "ID %s repeats line %d", r.id, prev)
		}
		seen[r.id] = r.line
		if !r.requirementOK {
			bad(r, "%s: empty requirement", r.id)
		}
		for _, s := range r.badCodeSpans {
			bad(r, "%s: proof %q is not path/to/file_test.go:TestName", r.id, s)
		}
		missing := missingRe.MatchString(r.status)
		known := missing
		for _, s := range statuses {
			known = known || r.status == s
		}
		if !known {
			bad(r, "%s: status %q: want one of %q or missing", r.id, r.status, statuses)
		}
		if !missing && len(r.refs) == 0 {
			bad(r, "%s: status %q names no test", r.id, r.status)
		}
		for _, x := range r.refs {
			ok, err := cache.has(root, x)
			switch {
			case err != nil:
				bad(r, "%s: %s: %v", r.id, x.file, err)
			case !ok:
				bad(r, "%s: %s has no func %s (renamed or moved? update the table)", r.id, x.file, x.test)
			}
		}
	}
	return problems
}

// Every test requirements.md names exists: the file is there and declares the
// function; every row is well-formed and its status is one of the four.
func TestRequirementsTableNamesExistingTests(t *testing.T) {
	md, err := os.ReadFile("requirements.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkTable("docs/requirements.md", string(md), "..") {
		t.Error(p)
	}
	rows := parseTable(string(md))
	perSeed := map[string]int{}
	for _, r := range rows {
		perSeed[r.id[:3]]++
	}
	for _, seed := range []string{"000", "003", "004"} {
		if perSeed[seed] == 0 {
			t.Errorf("no row for seed %s", seed)
		}
	}
}

// The checker finds each kind of mistake, naming the line.
func TestRequirementsCheckerCatchesBadRows(t *testing.T) {
	md := strings.Join([]string{
		"| ID | § | Requirement | Proof | Status |",
		"|---|---|---|---|---|",
		"| 000.1a | §1 | fine | `docs/requirements_test.go:TestRequirementsCheckerCatchesBadRows` | real server |",
		"| 000.1b | §1 | a renamed test | `docs/requirements_test.go:TestNoSuchThing` | real server |",
		"| 000.1c | §1 | a moved file | `tests/nowhere_test.go:TestX` | static |",
		"| 000.1d | §1 | no proof | — | real server |",
		"| 000.1e | §1 | a typo | `docs/requirements_test.go TestX` | real server |",
		"| 000.1e | §1 | repeated id | — | missing — later |",
		"| 000.1f | §1 | odd status | — | maybe |",
		"| 000.1g | §1 | missing is fine | — | missing |",
		"| bad | §1 | bad id | — | missing |",
	}, "\n")
	got := strings.Join(checkTable("t.md", md, ".."), "\n")
	for _, want := range []string{
		"t.md:4: 000.1b: docs/requirements_test.go has no func TestNoSuchThing",
		"t.md:5: 000.1c: tests/nowhere_test.go:",
		`t.md:6: 000.1d: status "real server" names no test`,
		`t.md:7: 000.1e: proof "docs/requirements_test.go TestX" is not path/to/file_test.go:TestName`,
		"t.md:8: ID 000.1e repeats line 7",
		`t.md:9: 000.1f: status "maybe"`,
		`t.md:11: ID "bad"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the checker missed %q; it said:\n%s", want, got)
		}
	}
	for _, clean := range []string{"t.md:3:", "t.md:10:"} {
		if strings.Contains(got, clean) {
			t.Errorf("the checker flagged a good row (%s):\n%s", clean, got)
		}
	}
}
