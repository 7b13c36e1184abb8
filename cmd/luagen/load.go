package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/functions"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// loadCommand is the deploy step of an instance: as its loader user, on every
// primary named, it loads the instance's Functions library with FUNCTION LOAD
// REPLACE and checks the version it answers (mode: functions), or loads every
// script with SCRIPT LOAD (mode: evalsha). The code comes from the spec and
// the Lua, exactly as generate embeds it, so run it from the commit the
// services were built from (luagen check passes there).
type loadCommand struct {
	inputs
	addrs         multi
	cluster       bool
	user, pwFile  string
	timeout       time.Duration
	allowReadable bool
}

func (c *loadCommand) declare(fs *flag.FlagSet) {
	c.declareInputs(fs, withLua|withInstance)
	fs.Var(&c.addrs, "addr", "HOST:PORT of a primary (repeatable; with --cluster, any node of the cluster)")
	fs.BoolVar(&c.cluster, "cluster", false, "the addresses are nodes of one Redis Cluster: load on each of its primaries")
	fs.StringVar(&c.user, "user", "", "the ACL user (default: the instance's loader user, <instance>_loader)")
	fs.StringVar(&c.pwFile, "password-file", "", "the file holding the user's password (required)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "how long the whole step may take")
	fs.BoolVar(&c.allowReadable, "allow-readable", false, "accept a password file with mode bits beyond 0600 (readable by group or others), with a warning; refused without it")
}

func (c *loadCommand) run(_ *flag.FlagSet, stdout, stderr io.Writer) int {
	if c.instance == "" || len(c.addrs) == 0 || c.pwFile == "" {
		fmt.Fprintln(stderr, "luagen load: --instance, --addr and --password-file are required")
		return exitUsage
	}
	for i, a := range c.addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" || strings.ContainsFunc(a, unsafeRune) {
			fmt.Fprintf(stderr, "luagen load: --addr #%d: want HOST:PORT\n", i+1)
			return exitUsage
		}
	}
	spec, in, code := c.loadInstance(stderr)
	if in == nil {
		return code
	}
	if c.user == "" {
		c.user = acl.LoaderUser(in)
	}
	password, ok := readPassword(c.pwFile, c.user, c.allowReadable, stderr)
	if !ok {
		return exitProblem
	}
	srcs, ok := c.loadLua(spec, stderr)
	if !ok {
		return exitProblem
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var clients []redis.UniversalClient
	if c.cluster {
		clients = append(clients, redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs, Username: c.user, Password: password}))
	} else {
		for _, a := range c.addrs {
			clients = append(clients, redis.NewClient(&redis.Options{Addr: a, Username: c.user, Password: password, MaxRetries: -1}))
		}
	}
	defer func() {
		for _, client := range clients {
			_ = client.Close()
		}
	}()
	failed := false
	if in.Functions() {
		lib, err := functions.Build(spec, in, srcs)
		if err != nil {
			fmt.Fprintf(stderr, "luagen load: %v\n", err)
			return exitProblem
		}
		rl := runtime.Library{Name: lib.Name, Version: lib.Version, VersionFunction: functions.VersionFunction(in), Source: lib.Source}
		for _, client := range clients {
			r, err := runtime.LoadLibrary(ctx, client, rl)
			for _, n := range r.Nodes {
				if n.Err != nil {
					fmt.Fprintf(stderr, "luagen load: %s: %v\n", n.Addr, n.Err)
					continue
				}
				fmt.Fprintf(stdout, "%s: library %s version %.12s loaded (%d functions)\n", n.Addr, lib.Name, n.Version, len(lib.Functions))
			}
			if err != nil {
				failed = true
				if len(r.Nodes) == 0 {
					fmt.Fprintf(stderr, "luagen load: %v\n", err)
				}
			}
		}
	} else {
		var scripts []*runtime.Script
		for _, s := range spec.ScriptsOf(in) {
			sc, err := runtime.NewScript(s.Name, string(srcs[s.ID].Src), srcs[s.ID].SHA1, s.ReadOnly)
			if err != nil {
				fmt.Fprintf(stderr, "luagen load: %v\n", err)
				return exitProblem
			}
			scripts = append(scripts, sc)
		}
		for _, client := range clients {
			r, err := runtime.PreloadNodes(ctx, client, scripts...)
			for _, n := range r.Nodes {
				if n.Err != nil {
					fmt.Fprintf(stderr, "luagen load: %s %s: %v\n", n.Role, n.Addr, n.Err)
					continue
				}
				fmt.Fprintf(stdout, "%s %s: %d scripts loaded (SCRIPT LOAD; a restart or failover empties the script cache: run again, or recover NOSCRIPT with runtime.WithLoader)\n", n.Role, n.Addr, len(n.Loaded))
			}
			if err != nil {
				failed = true
				if len(r.Nodes) == 0 {
					fmt.Fprintf(stderr, "luagen load: %v\n", err)
				}
			}
		}
	}
	if failed {
		return exitProblem
	}
	return exitOK
}

// readPassword reads a password file with the checks of luagen acl's
// (acl.HashPassword's, and its mode: nothing beyond 0600 unless allowReadable),
// never showing the file's content.
func readPassword(path, user string, allowReadable bool, stderr io.Writer) (string, bool) {
	if strings.ContainsFunc(path, unsafeRune) {
		fmt.Fprintln(stderr, "luagen load: --password-file: the path holds a control character")
		return "", false
	}
	fi, err := os.Stat(path)
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	var secret []byte
	if err == nil {
		secret, err = os.ReadFile(path)
	}
	if err != nil {
		if u := errors.Unwrap(err); u != nil {
			err = u
		}
		fmt.Fprintf(stderr, "luagen load: password file of %s: %v\n", user, err)
		return "", false
	}
	if perm := fi.Mode().Perm(); perm&^0o600 != 0 {
		if !allowReadable {
			fmt.Fprintf(stderr, "luagen load: password file of %s has mode %04o, beyond 0600 (readable by its group or others, or executable): chmod 600 it, or pass --allow-readable\n", user, perm)
			return "", false
		}
		fmt.Fprintf(stderr, "luagen load: warning: password file of %s has mode %04o, beyond 0600: allowed by --allow-readable\n", user, perm)
	}
	if _, err := acl.HashPassword(secret); err != nil {
		fmt.Fprintf(stderr, "luagen load: password file of %s: %v\n", user, err)
		return "", false
	}
	return strings.TrimRight(string(secret), "\r\n"), true
}
