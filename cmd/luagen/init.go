package main

import (
	"bytes"
	"embed"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/hanchat/luagen/docs"
)

//go:embed template
var templates embed.FS

// initCommand writes a minimal spec, one script and a Go test of it into --dir: a
// page-hit counter with a TTL, or with --durable a job queue whose keys the
// service keeps (ttl none) within a bound. Beside the spec it writes the JSON
// Schema the spec's first line points editors at, and generate.go, whose
// generate directive runs go tool luagen generate (unless a Go file there
// already runs luagen generate). It refuses to overwrite anything: when one of
// its files exists it writes none. It ends with the commands to run next, each
// of which works as printed from the directory init ran in.
type initCommand struct {
	dir     string
	durable bool
}

func (c *initCommand) declare(fs *flag.FlagSet) {
	fs.StringVar(&c.dir, "dir", ".", "the directory to write keyspec.yaml, its keyspec.schema.json, lua/, generate.go and the test into (inside a Go module)")
	fs.BoolVar(&c.durable, "durable", false, "write a job queue whose keys never expire (ttl none, bounded by max_len) instead of the page-hit counter")
}

func (c *initCommand) run(_ *flag.FlagSet, stdout, stderr io.Writer) int {
	abs, err := filepath.Abs(c.dir)
	if err != nil {
		fmt.Fprintf(stderr, "luagen init: %v\n", err)
		return exitProblem
	}
	importPath, err := generatedImport(abs)
	if err != nil {
		fmt.Fprintf(stderr, "luagen init: %v\n", err)
		return exitProblem
	}
	pkg, err := testPackage(abs)
	if err != nil {
		fmt.Fprintf(stderr, "luagen init: %v\n", err)
		return exitProblem
	}
	example := initExamples[c.durable]
	files := map[string][]byte{}
	for name, from := range example.files {
		b, err := fs.ReadFile(templates, from)
		if err != nil {
			fmt.Fprintf(stderr, "luagen init: %v\n", err)
			return exitProblem
		}
		files[name] = b
	}
	tmpl := template.Must(template.ParseFS(templates, example.test))
	var test bytes.Buffer
	if err := tmpl.Execute(&test, map[string]string{"Package": pkg, "Import": importPath}); err != nil {
		fmt.Fprintf(stderr, "luagen init: %v\n", err)
		return exitProblem
	}
	files[example.testFile] = test.Bytes()
	files[schemaFile] = docs.KeyspecSchema
	wired, err := runsLuagenGenerate(abs)
	if err != nil {
		fmt.Fprintf(stderr, "luagen init: %v\n", err)
		return exitProblem
	}
	if !wired {
		files[generateFile] = []byte(fmt.Sprintf(generateSource, strings.TrimSuffix(pkg, "_test")))
	}
	mod, err := findGoMod(abs)
	if err != nil {
		fmt.Fprintf(stderr, "luagen init: %v\n", err)
		return exitProblem
	}
	wrote := func(name string) { fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(c.dir, name)) }
	if code := writeNew("init", abs, c.dir, files, stderr, wrote); code != exitOK {
		return code
	}
	fmt.Fprint(stdout, nextSteps(c.dir, mod, wired))
	return exitOK
}

// generateFile is the file luagen init writes to wire go generate to luagen.
const generateFile = "generate.go"

// generateSource is generate.go; its %s is the package's name.
const generateSource = `package %s

// go generate ./... writes generated/ from keyspec.yaml and lua/ with the
// luagen of this module's tool directive (luagen's docs/install.md).
//
//go:generate go tool luagen generate
`

// runsLuagenGenerate reports whether a Go file in dir already has a generate
// directive running luagen generate.
func runsLuagenGenerate(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "//go:generate ") && strings.Contains(line, "luagen") && strings.Contains(line, " generate") {
				return true, nil
			}
		}
	}
	return false, nil
}

// nextSteps are the commands to run after luagen init, one a line, each
// working as printed from where init ran: into the directory; the tool
// directive when go.mod has none (go get -tool from the module proxy, or, when
// go.mod replaces luagen by a checkout, which the proxy cannot resolve, the
// requirement and the directive written by go mod edit and go mod tidy -e:
// -e because the generated package the test imports does not exist yet); go
// generate (generate.go, or the user's own go:generate line); go mod tidy for
// the generated code's requirements; and the test init wrote.
func nextSteps(dir string, mod *goMod, wired bool) string {
	var steps []string
	if d := filepath.Clean(dir); d != "." {
		steps = append(steps, "cd "+shellQuote(d))
	}
	var note string
	switch {
	case mod != nil && mod.tools[luagenTool]:
	case mod != nil && mod.replaces[luagenModule]:
		steps = append(steps, "go mod edit -require="+luagenModule+"@"+replacedVersion+" -tool="+luagenTool, "go mod tidy -e")
		note = "; go mod tidy -e reports the generated package missing until go generate writes it"
	default:
		steps = append(steps, "go get -tool "+luagenTool)
	}
	steps = append(steps, "go generate ./...", "go mod tidy", "go test ./...")
	var b strings.Builder
	if wired {
		b.WriteString("next steps (go generate runs your go:generate line for luagen generate" + note + "):\n")
	} else {
		b.WriteString("next steps (go generate runs go tool luagen generate, from " + generateFile + note + "):\n")
	}
	for _, s := range steps {
		b.WriteString("  " + s + "\n")
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it holds anything but letters,
// digits and / . _ - characters.
func shellQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// initExample is what luagen init writes: files (written as they are, by
// path, from the templates) and a test made from a template.
type initExample struct {
	files    map[string]string
	test     string
	testFile string
}

// initExamples are the counter (false) and the durable job queue (true).
var initExamples = map[bool]initExample{
	false: {
		files:    map[string]string{"keyspec.yaml": "template/keyspec.yaml", filepath.Join("lua", "app", "hits_incr.lua"): "template/hits_incr.lua"},
		test:     "template/hits_test.go.tmpl",
		testFile: "luagen_hits_test.go",
	},
	true: {
		files:    map[string]string{"keyspec.yaml": "template/durable/keyspec.yaml", filepath.Join("lua", "app", "job_push.lua"): "template/durable/job_push.lua"},
		test:     "template/durable/jobs_test.go.tmpl",
		testFile: "luagen_jobs_test.go",
	},
}

// generatedImport is the import path of generated/app under dir, from the go.mod
// at or above dir.
func generatedImport(dir string) (string, error) {
	mod, err := findGoMod(dir)
	if err != nil {
		return "", err
	}
	if mod == nil {
		return "", fmt.Errorf("no go.mod at or above %s: run go mod init first (the test luagen init writes imports the generated package)", dir)
	}
	if mod.module == "" {
		return "", fmt.Errorf("%s has no module line", mod.path)
	}
	rel, err := filepath.Rel(filepath.Dir(mod.path), dir)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(mod.module+"/"+filepath.ToSlash(rel), "/.") + "/generated/app", nil
}

// testPackage is the package clause of the test: the external test package of
// the Go package already in dir, or dir's own name.
func testPackage(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly)
		if err != nil {
			return "", err
		}
		return f.Name.Name + "_test", nil
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return -1
	}, filepath.Base(dir))
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = "service" + name
	}
	return name + "_test", nil
}
