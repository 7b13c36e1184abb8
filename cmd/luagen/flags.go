package main

import (
	"os"

	"errors"
	"flag"
	"fmt"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"io"
)

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

// specFlag is specVar into a new string.
func specFlag(fs *flag.FlagSet) *string {
	p := new(string)
	specVar(fs, p)
	return p
}

// luaFlag is luaVar into a new string.
func luaFlag(fs *flag.FlagSet) *string {
	p := new(string)
	luaVar(fs, p)
	return p
}

// instanceFlag is the --instance flag of the commands about one instance.
func instanceFlag(fs *flag.FlagSet) *string {
	return fs.String("instance", "", "the instance (required)")
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

// loadLua reads and checks every script of spec under luaDir (compiler.Load),
// printing the error; ok false means exit 1.
func loadLua(spec *keyspec.Spec, luaDir string, stderr io.Writer) (map[string]*compiler.Source, bool) {
	srcs, err := compiler.Load(spec, os.DirFS(luaDir), luaDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	return srcs, true
}
