package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hanchat/luagen/gen/importer"
	"github.com/hanchat/luagen/gen/keyspec"
)

// importCommand brings existing scripts under luagen: it finds them in --from
// (.lua files, and redis.NewScript / rueidis.NewLuaScript literals of Go
// files), and writes each as lua/<instance>/<name>.lua (its source unchanged)
// and a draft keyspec.yaml with a TODO(luagen import) for every decision only a
// person can make. It refuses to overwrite anything: when one of its files
// exists it writes none.
type importCommand struct {
	from                            multi
	instance, dir, specName, luaDir string
}

func (c *importCommand) declare(fs *flag.FlagSet) {
	fs.Var(&c.from, "from", "a .lua file, a .go file, or a directory of them (repeatable)")
	fs.StringVar(&c.instance, "instance", "", "the instance the scripts run on (required): lua/<instance>/, and its name in the spec")
	fs.StringVar(&c.dir, "dir", ".", "the directory to write keyspec.yaml and lua/ into")
	fs.StringVar(&c.specName, "spec", "keyspec.yaml", "the spec file to write, relative to --dir")
	fs.StringVar(&c.luaDir, "lua", "lua", "the Lua directory, relative to --dir")
}

func (c *importCommand) run(fs *flag.FlagSet, stdout, stderr io.Writer) int {
	if len(c.from) == 0 || c.instance == "" {
		fmt.Fprintln(stderr, "luagen import: --from and --instance are required")
		fs.Usage()
		return exitUsage
	}
	scripts, err := importer.Find(c.from)
	if err != nil {
		fmt.Fprintf(stderr, "luagen import: %v\n", err)
		return exitProblem
	}
	draft, err := importer.New(c.instance, scripts)
	if err != nil {
		fmt.Fprintf(stderr, "luagen import: %v\n", err)
		return exitProblem
	}
	files := map[string][]byte{c.specName: draft.Spec}
	for _, s := range draft.Scripts {
		files[filepath.Join(c.luaDir, c.instance, s.Name+".lua")] = s.Src
	}
	if code := writeNew("import", c.dir, c.dir, files, stderr, nil); code != exitOK {
		return code
	}
	fmt.Fprintf(stdout, "wrote %s and %d script(s) under %s\n", filepath.Join(c.dir, c.specName), len(draft.Scripts), filepath.Join(c.dir, c.luaDir, c.instance))
	for _, n := range draft.Notes {
		fmt.Fprintf(stdout, "not read: %s\n", n)
	}
	fmt.Fprintf(stdout, "%d decision(s) still open, each marked %s: luagen generate lists them\n", draft.Todos, keyspec.TodoMarker)
	return exitOK
}

// writeNew writes files, by their paths under dir, creating the directories
// they need, unless one of them exists already: then it writes none. shown is
// dir as the command line gave it, for the messages of luagen cmd; wrote, when
// not nil, is told of each file once written.
func writeNew(cmd, dir, shown string, files map[string][]byte, stderr io.Writer, wrote func(name string)) int {
	var exists []string
	for name := range files {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			exists = append(exists, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "luagen %s: %v\n", cmd, err)
			return exitProblem
		}
	}
	if len(exists) > 0 {
		slices.Sort(exists)
		fmt.Fprintf(stderr, "luagen %s: %s already has %s; nothing written\n", cmd, shown, strings.Join(exists, ", "))
		return exitProblem
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			fmt.Fprintf(stderr, "luagen %s: %v\n", cmd, err)
			return exitProblem
		}
		if err := os.WriteFile(full, files[name], 0o644); err != nil {
			fmt.Fprintf(stderr, "luagen %s: %v\n", cmd, err)
			return exitProblem
		}
		if wrote != nil {
			wrote(name)
		}
	}
	return exitOK
}
