package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// A command is a luagen subcommand: the flags it declares, and what it does
// once runCommand has parsed them (its exit status).
type command interface {
	declare(fs *flag.FlagSet)
	run(fs *flag.FlagSet, stdout, stderr io.Writer) int
}

// runCommand is every subcommand's start: its flag set ("luagen acl"), its
// flags, the arguments parsed into them (help, a wrong flag or an argument
// after the flags ends it), then the command itself.
func runCommand(name string, cmd command, args []string, stdout, stderr io.Writer) int {
	fs := newFlags(name, stderr)
	cmd.declare(fs)
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	return cmd.run(fs, stdout, stderr)
}

// newFlags is the flag set of the command name ("luagen acl"), reporting to
// stderr and returning its errors rather than exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("luagen "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// specVar is the --spec flag every command that reads a spec has.
func specVar(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "spec", "keyspec.yaml", "the spec file")
}

// luaVar is the --lua flag every command that reads the scripts has.
func luaVar(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "lua", "lua", "the directory holding <instance>/<script>.lua")
}

// inputFlags are the flags of inputs a command has besides --spec.
type inputFlags int

const (
	withLua      inputFlags = 1 << iota // --lua: the command reads the scripts
	withInstance                        // --instance: the command is about one instance
)

// inputs are what a command reads: the spec (--spec), and as it declares
// them the scripts (--lua) and one of the spec's instances (--instance).
type inputs struct {
	spec, lua, instance string
}

// declareInputs adds --spec and the flags of with.
func (in *inputs) declareInputs(fs *flag.FlagSet, with inputFlags) {
	specVar(fs, &in.spec)
	if with&withLua != 0 {
		luaVar(fs, &in.lua)
	}
	if with&withInstance != 0 {
		fs.StringVar(&in.instance, "instance", "", "the instance (required)")
	}
}

// requireInstance reports --instance left empty; false means exit 2.
func (in *inputs) requireInstance(fs *flag.FlagSet, stderr io.Writer) bool {
	return required(fs, stderr, "instance", in.instance, "")
}

// loadSpec reads the spec, printing its error; ok false means exit 1.
func (in *inputs) loadSpec(stderr io.Writer) (*keyspec.Spec, bool) {
	spec, err := keyspec.Load(in.spec)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	return spec, true
}

// loadInstance reads the spec and finds --instance in it; a nil instance
// means the command stops with the code returned.
func (in *inputs) loadInstance(stderr io.Writer) (*keyspec.Spec, *keyspec.Instance, int) {
	spec, ok := in.loadSpec(stderr)
	if !ok {
		return nil, nil, exitProblem
	}
	inst := spec.Instance(in.instance)
	if inst == nil {
		fmt.Fprintf(stderr, "luagen: instance %q is not declared in %s\n", in.instance, in.spec)
		return nil, nil, exitProblem
	}
	return spec, inst, 0
}

// loadServer is loadInstance for the commands about one server of the
// instance (--server, "" for its own): it refuses a server the instance does
// not declare, and says, for a split instance without --server, which server
// the output is for.
func (in *inputs) loadServer(server string, stderr io.Writer) (*keyspec.Spec, *keyspec.Instance, int) {
	spec, inst, code := in.loadInstance(stderr)
	if inst == nil {
		return nil, nil, code
	}
	if inst.ServerNamed(server) == nil {
		if !inst.Split() {
			fmt.Fprintf(stderr, "luagen: --server %s: instance %s is on one server (no servers: in %s)\n", server, inst.Name, in.spec)
		} else {
			fmt.Fprintf(stderr, "luagen: --server %s: instance %s has no such server in %s (servers: %s)\n", server, inst.Name, in.spec, strings.Join(inst.ServerNames()[1:], ", "))
		}
		return nil, nil, exitProblem
	}
	if server == "" && inst.Split() {
		fmt.Fprintf(stderr, "luagen: instance %s is split: this is for its own server; its other servers (--server NAME): %s\n", inst.Name, strings.Join(inst.ServerNames()[1:], ", "))
	}
	return spec, inst, 0
}

// loadLua reads and checks every script of spec under --lua (compiler.Load),
// printing the error; ok false means exit 1.
func (in *inputs) loadLua(spec *keyspec.Spec, stderr io.Writer) (map[string]*compiler.Source, bool) {
	srcs, err := compiler.Load(spec, os.DirFS(in.lua), in.lua)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	return srcs, true
}

// required reports a required flag left empty ("luagen acl: --instance is
// required", then why, when said): false means exit 2.
func required(fs *flag.FlagSet, stderr io.Writer, name, value, why string) bool {
	if value != "" {
		return true
	}
	fmt.Fprintf(stderr, "%s: --%s is required%s\n", fs.Name(), name, why)
	return false
}

// parse parses flags; ok is false when the command must stop with code.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument after the flags (not shown: it may be a secret); this command takes flags only\n", fs.Name())
		return exitUsage, false
	}
	return 0, true
}
