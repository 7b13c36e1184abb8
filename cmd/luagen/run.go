package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hanchat/luagen/gen"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/lint"
)

// Exit statuses.
const (
	exitOK      = 0
	exitProblem = 1
	exitUsage   = 2
)

const usage = `usage: luagen <command> [flags]

commands:
  generate   write the generated Go packages (one per instance)
  check      exit 1 when the generated packages differ from what generate would write
  lint       report spec and Lua problems as FILE:LINE: rule: message
  acl        print the aclfile of an instance or one of its servers (least privilege, from the spec and the Lua)
  config     print the hardened redis.conf fragment of an instance or one of its servers
  init       write a minimal keyspec.yaml, one script and a Go test of it (--dir D; --durable: a job queue kept without TTLs)
  load       the deploy step: load an instance's scripts (its Functions library, or SCRIPT LOAD) on every primary as its loader user
  sizing     measure an instance's keys on a scratch redis-server and print the memory a cardinality file implies
  alerts     print the Prometheus alerting and recording rules of an instance (or one of its servers)
  dashboards print the Grafana dashboard of an instance (or one of its servers)
  breaking   report what changed since an older revision (--against REF) that breaks stored data, a rolling deploy or ACL grants
  cover      report the Lua coverage go test recorded (LUAGEN_COVER=DIR): lines and branches per script, --check the floors, --html
  doc        write the keyspace catalogue (--out DIR): instances, keys, scripts, users, channels and a map, one HTML page
  diff       describe for a reviewer what changed since --against REF: each script's commands and keys, the aclfile lines (Markdown)
  import     draft lua/<instance>/ and a keyspec.yaml from existing scripts (.lua files, redis.NewScript literals in Go)
  schema     print the JSON Schema of keyspec.yaml (luagen init writes it beside the spec; refresh it after upgrading luagen)
  version    print luagen's module version and the VCS revision it was built from

run "luagen <command> -h" for a command's flags
`

// run is the whole command line; main only exits with its status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	name := args[0]
	if name == "--version" {
		name = "version"
	}
	if newCommand, ok := commands[name]; ok {
		return runCommand(name, newCommand(), args[1:], stdout, stderr)
	}
	switch name {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "luagen: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// commands are the subcommands runCommand runs, by name: each makes the
// command afresh.
var commands = map[string]func() command{
	"generate":   func() command { return &genCommand{withOut: true, do: runGenerate} },
	"check":      func() command { return &genCommand{withOut: true, do: runCheck} },
	"lint":       func() command { return &genCommand{do: runLint} },
	"acl":        func() command { return new(aclCommand) },
	"config":     func() command { return new(configCommand) },
	"init":       func() command { return new(initCommand) },
	"load":       func() command { return new(loadCommand) },
	"sizing":     func() command { return new(sizingCommand) },
	"alerts":     func() command { return new(alertsCommand) },
	"dashboards": func() command { return new(dashboardsCommand) },
	"breaking":   comparison("breaking", reportBreaking, "text (FILE:LINE: rule: message [category], the default) or json", "text", "json"),
	"cover":      func() command { return new(coverCommand) },
	"doc":        func() command { return new(docCommand) },
	"diff":       comparison("diff", reportDiff, "markdown (for a pull request comment, the default) or json", "markdown", "json"),
	"import":     func() command { return new(importCommand) },
	"schema":     func() command { return schemaCommand{} },
	"version":    func() command { return versionCommand{} },
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// genCommand is generate, check or lint: --spec and --lua, and for generate
// and check (withOut) the flags of what is generated; do is the command.
type genCommand struct {
	inputs
	out       string
	instances multi
	client    string
	withOut   bool
	do        func(g *genCommand, stdout, stderr io.Writer) int
}

func (g *genCommand) declare(fs *flag.FlagSet) {
	g.declareInputs(fs, withLua)
	if g.withOut {
		fs.StringVar(&g.out, "out", "generated", "the directory of the generated packages")
		fs.Var(&g.instances, "instance", "generate only this instance (repeatable)")
		fs.StringVar(&g.client, "client", "", "the Go client the wrappers run on, for every instance generated: go-redis or rueidis (default: each instance's client: in the spec)")
	}
}

func (g *genCommand) run(_ *flag.FlagSet, stdout, stderr io.Writer) int {
	return g.do(g, stdout, stderr)
}

// generate parses the spec and renders the packages in memory.
func (g *genCommand) generate() (gen.Files, error) {
	spec, err := keyspec.Load(g.spec)
	if err != nil {
		return nil, err
	}
	switch g.client {
	case "":
	case keyspec.ClientGoRedis, keyspec.ClientRueidis:
		for _, in := range spec.Instances {
			in.Client = g.client
		}
	default:
		return nil, fmt.Errorf("--client %q: want go-redis or rueidis", g.client)
	}
	return gen.Generate(spec, os.DirFS(g.lua), gen.Options{LuaDir: g.lua, Instances: g.instances})
}

// render is generate for generate and check: the packages, or ok false
// when the command is over (exit 1).
func (g *genCommand) render(stderr io.Writer) (files gen.Files, ok bool) {
	files, err := g.generate()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	return files, true
}

func runGenerate(g *genCommand, stdout, stderr io.Writer) int {
	files, ok := g.render(stderr)
	if !ok {
		return exitProblem
	}
	if err := gen.Write(g.out, files, len(g.instances) == 0); err != nil {
		fmt.Fprintf(stderr, "luagen generate: %v\n", err)
		return exitProblem
	}
	fmt.Fprintf(stdout, "luagen: %d files in %s\n", len(files), g.out)
	tidyHint(g.out, files, stderr)
	return exitOK
}

func runCheck(g *genCommand, stdout, stderr io.Writer) int {
	files, ok := g.render(stderr)
	if !ok {
		return exitProblem
	}
	drift, err := gen.Diff(g.out, files, len(g.instances) == 0)
	if err != nil {
		fmt.Fprintf(stderr, "luagen check: %v\n", err)
		return exitProblem
	}
	if len(drift) == 0 {
		fmt.Fprintf(stdout, "luagen: %s is current (%d files)\n", g.out, len(files))
		return exitOK
	}
	for _, d := range drift {
		fmt.Fprintf(stderr, "%s/%s: %s\n", g.out, d.Path, d.Kind)
		if d.Diff != "" {
			fmt.Fprintln(stderr, indent(d.Diff))
		}
	}
	fmt.Fprintf(stderr, "luagen check: %d files differ from %s and %s; run luagen generate\n", len(drift), g.spec, g.lua)
	return exitProblem
}

func runLint(g *genCommand, stdout, stderr io.Writer) int {
	src, err := keyspec.ReadFile(g.spec)
	if err != nil {
		fmt.Fprintf(stderr, "luagen lint: %v\n", err)
		return exitProblem
	}
	findings := lint.Run(pathBase(g.spec), src, os.DirFS(g.lua), g.lua)
	for _, f := range findings {
		fmt.Fprintln(stdout, f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(stderr, "luagen lint: %d problems\n", len(findings))
		return exitProblem
	}
	return exitOK
}

func pathBase(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
