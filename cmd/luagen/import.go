package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hanchat/luagen/gen/importer"
	"github.com/hanchat/luagen/gen/keyspec"
)

// runImport brings existing scripts under luagen: it finds them in --from
// (.lua files, and redis.NewScript / rueidis.NewLuaScript literals of Go
// files), and writes each as lua/<instance>/<name>.lua (its source unchanged)
// and a draft keyspec.yaml with a TODO(luagen import) for every decision only a
// person can make. It refuses to overwrite anything: when one of its files
// exists it writes none.
func runImport(args []string, stdout, stderr io.Writer) int {
	fset := newFlags("import", stderr)
	var from multi
	fset.Var(&from, "from", "a .lua file, a .go file, or a directory of them (repeatable)")
	instance := fset.String("instance", "", "the instance the scripts run on (required): lua/<instance>/, and its name in the spec")
	dir := fset.String("dir", ".", "the directory to write keyspec.yaml and lua/ into")
	specName := fset.String("spec", "keyspec.yaml", "the spec file to write, relative to --dir")
	luaDir := fset.String("lua", "lua", "the Lua directory, relative to --dir")
	if code, ok := parse(fset, args, stderr); !ok {
		return code
	}
	if len(from) == 0 || *instance == "" {
		fmt.Fprintln(stderr, "luagen import: --from and --instance are required")
		fset.Usage()
		return exitUsage
	}
	scripts, err := importer.Find(from)
	if err != nil {
		fmt.Fprintf(stderr, "luagen import: %v\n", err)
		return exitProblem
	}
	draft, err := importer.New(*instance, scripts)
	if err != nil {
		fmt.Fprintf(stderr, "luagen import: %v\n", err)
		return exitProblem
	}
	files := map[string][]byte{*specName: draft.Spec}
	for _, s := range draft.Scripts {
		files[filepath.Join(*luaDir, *instance, s.Name+".lua")] = s.Src
	}
	var exists []string
	for name := range files {
		if _, err := os.Lstat(filepath.Join(*dir, name)); err == nil {
			exists = append(exists, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "luagen import: %v\n", err)
			return exitProblem
		}
	}
	if len(exists) > 0 {
		fmt.Fprintf(stderr, "luagen import: %s already has %s; nothing written\n", *dir, strings.Join(sortedStrings(exists), ", "))
		return exitProblem
	}
	for _, name := range sortedNames(files) {
		full := filepath.Join(*dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			fmt.Fprintf(stderr, "luagen import: %v\n", err)
			return exitProblem
		}
		if err := os.WriteFile(full, files[name], 0o644); err != nil {
			fmt.Fprintf(stderr, "luagen import: %v\n", err)
			return exitProblem
		}
	}
	fmt.Fprintf(stdout, "wrote %s and %d script(s) under %s\n", filepath.Join(*dir, *specName), len(draft.Scripts), filepath.Join(*dir, *luaDir, *instance))
	for _, n := range draft.Notes {
		fmt.Fprintf(stdout, "not read: %s\n", n)
	}
	fmt.Fprintf(stdout, "%d decision(s) still open, each marked %s: luagen generate lists them\n", draft.Todos, keyspec.TodoMarker)
	return exitOK
}
