package main

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanchat/luagen/gen"
)

// replacedVersion is the version the go command gives a module that only a
// replace directive provides: what a go.mod pointing at a checkout requires.
const replacedVersion = "v0.0.0-00010101000000-000000000000"

// luagenTool is the package path of luagen's command, as a tool directive of
// another module names it (go get -tool github.com/hanchat/luagen/cmd/luagen).
const luagenTool = luagenModule + "/cmd/luagen"

// goMod is what luagen reads of a go.mod: the module path, the modules it
// requires (directly or // indirect), the modules it replaces and its tool
// directives.
type goMod struct {
	path     string // the go.mod file
	module   string
	requires map[string]bool
	replaces map[string]bool
	tools    map[string]bool
}

// findGoMod reads the go.mod at or above dir; nil, nil when there is none.
func findGoMod(dir string) (*goMod, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for d := abs; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "go.mod")
		b, err := os.ReadFile(p)
		if err == nil {
			m := parseGoMod(b)
			m.path = p
			return m, nil
		}
		// No go.mod here, or no directory yet (a part of the path is a
		// file: what reads it says so).
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return nil, err
		}
		if filepath.Dir(d) == d {
			return nil, nil
		}
	}
}

// parseGoMod reads the module, require and tool directives of a go.mod, in
// their one-line and block forms; it does not validate the file (the go
// command does).
func parseGoMod(b []byte) *goMod {
	m := &goMod{requires: map[string]bool{}, replaces: map[string]bool{}, tools: map[string]bool{}}
	block := ""
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if block != "" {
			if fields[0] == ")" {
				block = ""
				continue
			}
			m.add(block, fields)
			continue
		}
		if len(fields) == 2 && fields[1] == "(" {
			block = fields[0]
			continue
		}
		if len(fields) >= 2 {
			m.add(fields[0], fields[1:])
		}
	}
	return m
}

func (m *goMod) add(verb string, args []string) {
	name := args[0]
	if uq, err := strconv.Unquote(name); err == nil {
		name = uq
	}
	switch verb {
	case "module":
		m.module = name
	case "require":
		m.requires[name] = true
	case "replace":
		m.replaces[name] = true
	case "tool":
		m.tools[name] = true
	}
}

// generatedModules are the modules generated code may import, besides the
// standard library and the module it is generated into.
var generatedModules = []string{luagenModule, "github.com/redis/go-redis/v9", "github.com/redis/rueidis"}

// missingRequirements are the modules the generated files import that the
// go.mod above out does not require: the go command refuses to build them
// until go mod tidy adds them. None when out is in no module, in luagen's own,
// or the module requires them all.
func missingRequirements(out string, files gen.Files) ([]string, *goMod, error) {
	mod, err := findGoMod(out)
	if err != nil || mod == nil || mod.module == luagenModule {
		return nil, mod, err
	}
	need := map[string]bool{}
	for _, p := range files.Paths() {
		if !strings.HasSuffix(p, ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, files[p], parser.ImportsOnly)
		if err != nil {
			return nil, mod, err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, m := range generatedModules {
				if path == m || strings.HasPrefix(path, m+"/") {
					need[m] = true
				}
			}
		}
	}
	var missing []string
	for m := range need {
		if !mod.requires[m] && mod.module != m {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	return missing, mod, nil
}

// tidyHint tells the user to run go mod tidy when the generated code needs
// modules their go.mod lacks. It only prints: generate has succeeded.
func tidyHint(out string, files gen.Files, stderr io.Writer) {
	missing, mod, err := missingRequirements(out, files)
	if err != nil || len(missing) == 0 {
		return
	}
	fmt.Fprintf(stderr, "luagen generate: %s does not require %s, which the generated code imports: run go mod tidy before go build or go test\n", mod.path, strings.Join(missing, ", "))
}
