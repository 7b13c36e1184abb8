package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
	"github.com/hanchat/luagen/runtime"
)

// runACL prints an instance's aclfile. Passwords come only from the files named
// and appear only as their SHA-256.
func runACL(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("luagen acl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	specPath := fs.String("spec", "keyspec.yaml", "the spec file")
	luaDir := fs.String("lua", "lua", "the directory holding <instance>/<script>.lua")
	instance := fs.String("instance", "", "the instance (required)")
	var pwFiles multi
	fs.Var(&pwFiles, "password-file", "USER=PATH: the file holding USER's password (repeatable)")
	prefix := fs.String("prefix", "", "the deployment prefix (\"acme:production:\"): required for, and only for, an instance with a deployment_prefix")
	server := fs.String("server", "", "one server of an instance split over several (servers: in the spec); default: the instance's own server")
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if *instance == "" {
		fmt.Fprintln(stderr, "luagen acl: --instance is required")
		return exitUsage
	}
	spec, in, code := loadInstance(*specPath, *instance, stderr)
	if in == nil {
		return code
	}
	if code, ok := checkServer(in, *server, *specPath, stderr); !ok {
		return code
	}
	switch {
	case in.Prefix != nil && *prefix == "":
		fmt.Fprintf(stderr, "luagen acl: instance %s has a deployment prefix: name the deployment with --prefix (the aclfile grants exactly one)\n", in.Name)
		return exitUsage
	case in.Prefix == nil && *prefix != "":
		fmt.Fprintf(stderr, "luagen acl: --prefix: instance %s has no deployment_prefix in %s\n", in.Name, *specPath)
		return exitUsage
	case in.Prefix != nil:
		if err := runtime.CheckPrefix(*prefix, in.Prefix.MaxLen); err != nil {
			fmt.Fprintf(stderr, "luagen acl: --prefix: %v\n", err)
			return exitUsage
		}
	}
	passwords := map[string]string{}
	for _, pf := range pwFiles {
		user, path, ok := strings.Cut(pf, "=")
		if !ok || user == "" || path == "" {
			fmt.Fprintf(stderr, "luagen acl: --password-file %q: want USER=PATH\n", pf)
			return exitUsage
		}
		if u := findUser(spec, in, user); u == nil && !slices.Contains(acl.GeneratedUsers(in), user) {
			fmt.Fprintf(stderr, "luagen acl: --password-file: user %q is not a user of %s (its users: %s)\n", user, in.Name, strings.Join(userNames(spec, in), ", "))
			return exitProblem
		}
		secret, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "luagen acl: password file of %s: %v\n", user, errors.Unwrap(err))
			return exitProblem
		}
		hash, err := acl.HashPassword(secret)
		if err != nil {
			fmt.Fprintf(stderr, "luagen acl: password file of %s (%s): %v\n", user, path, err)
			return exitProblem
		}
		passwords[user] = hash
	}
	srcs, err := compiler.Load(spec, os.DirFS(*luaDir), *luaDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitProblem
	}
	users, warnings, err := acl.DeriveServer(spec, in, *server, srcs, passwords)
	if err != nil {
		fmt.Fprintf(stderr, "luagen acl: %v\n", err)
		return exitProblem
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "luagen acl: warning: %s\n", w)
	}
	if in.Prefix != nil {
		users = acl.Deploy(users, *prefix)
	}
	fmt.Fprint(stdout, acl.Render(users))
	return exitOK
}

// runConfig prints an instance's hardened redis.conf fragment.
func runConfig(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("luagen config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	specPath := fs.String("spec", "keyspec.yaml", "the spec file")
	instance := fs.String("instance", "", "the instance (required)")
	o := serverconf.DefaultOptions
	fs.StringVar(&o.Bind, "bind", o.Bind, "addresses to listen on: loopback or private only")
	fs.IntVar(&o.Port, "port", o.Port, "the port")
	fs.StringVar(&o.ACLFile, "aclfile", o.ACLFile, "the path of the aclfile luagen acl wrote")
	server := fs.String("server", "", "one server of an instance split over several (servers: in the spec); default: the instance's own server")
	if code, ok := parse(fs, args, stderr); !ok {
		return code
	}
	if *instance == "" {
		fmt.Fprintln(stderr, "luagen config: --instance is required")
		return exitUsage
	}
	spec, in, code := loadInstance(*specPath, *instance, stderr)
	if in == nil {
		return code
	}
	if code, ok := checkServer(in, *server, *specPath, stderr); !ok {
		return code
	}
	out, err := serverconf.RenderServer(spec, in, *server, o)
	if err != nil {
		fmt.Fprintf(stderr, "luagen config: %v\n", err)
		return exitProblem
	}
	fmt.Fprint(stdout, out)
	return exitOK
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
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	return 0, true
}

func loadInstance(specPath, name string, stderr io.Writer) (*keyspec.Spec, *keyspec.Instance, int) {
	spec, err := keyspec.Load(specPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, nil, exitProblem
	}
	in := spec.Instance(name)
	if in == nil {
		fmt.Fprintf(stderr, "luagen: instance %q is not declared in %s\n", name, specPath)
		return nil, nil, exitProblem
	}
	return spec, in, 0
}

// checkServer refuses a --server the instance does not declare, and says, for a
// split instance without --server, which server the output is for.
func checkServer(in *keyspec.Instance, server, specPath string, stderr io.Writer) (int, bool) {
	if in.ServerNamed(server) == nil {
		if !in.Split() {
			fmt.Fprintf(stderr, "luagen: --server %s: instance %s is on one server (no servers: in %s)\n", server, in.Name, specPath)
		} else {
			fmt.Fprintf(stderr, "luagen: --server %s: instance %s has no such server in %s (servers: %s)\n", server, in.Name, specPath, strings.Join(in.ServerNames()[1:], ", "))
		}
		return exitProblem, false
	}
	if server == "" && in.Split() {
		fmt.Fprintf(stderr, "luagen: instance %s is split: this is for its own server; its other servers (--server NAME): %s\n", in.Name, strings.Join(in.ServerNames()[1:], ", "))
	}
	return 0, true
}

// userNames are the users of in an aclfile has: the spec's and the generated ones.
func userNames(spec *keyspec.Spec, in *keyspec.Instance) []string {
	var names []string
	for _, u := range spec.UsersOf(in) {
		names = append(names, u.Name)
	}
	return append(names, acl.GeneratedUsers(in)...)
}

func findUser(spec *keyspec.Spec, in *keyspec.Instance, name string) *keyspec.User {
	for _, u := range spec.UsersOf(in) {
		if u.Name == name {
			return u
		}
	}
	return nil
}
