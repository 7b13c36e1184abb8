package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
	"github.com/hanchat/luagen/runtime"
)

// aclCommand prints an instance's aclfile. Passwords come only from the files
// named and appear only as their SHA-256.
type aclCommand struct {
	inputs
	pwFiles                           multi
	prefix, server, client, adminUser string
	allowReadable                     bool
}

func (c *aclCommand) declare(fs *flag.FlagSet) {
	c.declareInputs(fs, withLua|withInstance)
	fs.Var(&c.pwFiles, "password-file", "USER=PATH: the file holding USER's password (repeatable)")
	fs.StringVar(&c.prefix, "prefix", "", "the deployment prefix (\"acme:production:\"): required for, and only for, an instance with a deployment_prefix")
	fs.StringVar(&c.server, "server", "", "one server of an instance split over several (servers: in the spec); default: the instance's own server")
	fs.StringVar(&c.client, "client", "", "the Go client the instance's services run on, as for luagen generate --client: go-redis or rueidis (default: the instance's client: in the spec); it decides what the runtime needs (rueidis: CLIENT INFO)")
	fs.StringVar(&c.adminUser, "admin-user", "", "add user NAME holding SHUTDOWN (and PING) only, to stop the server without a signal (tests, operators); its password comes from --password-file NAME=PATH (required). Default: no such user, and no user can SHUTDOWN")
	fs.BoolVar(&c.allowReadable, "allow-readable", false, "accept password files with mode bits beyond 0600 (readable by group or others), with a warning; refused without it")
}

func (c *aclCommand) run(fs *flag.FlagSet, stdout, stderr io.Writer) int {
	if !c.requireInstance(fs, stderr) {
		return exitUsage
	}
	switch c.client {
	case "", keyspec.ClientGoRedis, keyspec.ClientRueidis:
	default:
		fmt.Fprintf(stderr, "luagen acl: --client %q: want go-redis or rueidis\n", c.client)
		return exitUsage
	}
	spec, in, code := c.loadServer(c.server, stderr)
	if in == nil {
		return code
	}
	if c.client != "" {
		in.Client = c.client
	}
	switch {
	case in.Prefix != nil && c.prefix == "":
		fmt.Fprintf(stderr, "luagen acl: instance %s has a deployment prefix: name the deployment with --prefix (the aclfile grants exactly one)\n", in.Name)
		return exitUsage
	case in.Prefix == nil && c.prefix != "":
		fmt.Fprintf(stderr, "luagen acl: --prefix: instance %s has no deployment_prefix in %s\n", in.Name, c.spec)
		return exitUsage
	case in.Prefix != nil:
		if err := runtime.CheckPrefix(c.prefix, in.Prefix.MaxLen, in.Prefix.Reserved...); err != nil {
			fmt.Fprintf(stderr, "luagen acl: --prefix: %v\n", err)
			return exitUsage
		}
	}
	if c.adminUser != "" {
		if err := acl.CheckAdminName(spec, in, c.adminUser); err != nil {
			fmt.Fprintf(stderr, "luagen acl: --admin-user: %v\n", err)
			return exitUsage
		}
	}
	passwords, code, ok := readPasswordFiles(spec, in, c.pwFiles, c.adminUser, c.allowReadable, stderr)
	if !ok {
		return code
	}
	if c.adminUser != "" && passwords[c.adminUser] == "" {
		fmt.Fprintf(stderr, "luagen acl: --admin-user: admin user %q has no password: give it one (--password-file %s=PATH)\n", c.adminUser, c.adminUser)
		return exitUsage
	}
	srcs, ok := c.loadLua(spec, stderr)
	if !ok {
		return exitProblem
	}
	users, warnings, err := acl.DeriveServer(spec, in, c.server, srcs, passwords)
	if err != nil {
		fmt.Fprintf(stderr, "luagen acl: %v\n", err)
		return exitProblem
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "luagen acl: warning: %s\n", w)
	}
	if in.Prefix != nil {
		users = acl.Deploy(users, c.prefix)
	}
	if c.adminUser != "" {
		admin, err := acl.AdminUser(users, c.adminUser, passwords[c.adminUser])
		if err != nil {
			fmt.Fprintf(stderr, "luagen acl: --admin-user: %v\n", err)
			return exitUsage
		}
		users = append(users, admin)
	}
	fmt.Fprint(stdout, acl.Render(users))
	return exitOK
}

// configCommand prints an instance's hardened redis.conf fragment.
type configCommand struct {
	inputs
	o      serverconf.Options
	server string
}

func (c *configCommand) declare(fs *flag.FlagSet) {
	c.declareInputs(fs, withInstance)
	o := &c.o
	*o = serverconf.DefaultOptions
	fs.StringVar(&o.Bind, "bind", o.Bind, "addresses to listen on: loopback or private only")
	fs.IntVar(&o.Port, "port", o.Port, "the port")
	fs.StringVar(&o.ACLFile, "aclfile", o.ACLFile, "the path of the aclfile luagen acl wrote")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "TLS only (for traffic across a trust boundary): the server's certificate; --port becomes the TLS port and the plaintext port is closed")
	fs.StringVar(&o.TLSKeyFile, "tls-key-file", "", "the key of --tls-cert-file")
	fs.StringVar(&o.TLSCAFile, "tls-ca-file", "", "with --tls-cert-file (required): the CA trusted for replicas, cluster peers and, with --tls-auth-clients, clients")
	fs.BoolVar(&o.TLSAuthClients, "tls-auth-clients", false, "with --tls-cert-file: require client certificates of --tls-ca-file (mutual TLS)")
	fs.StringVar(&o.ClusterConfigFile, "cluster-config-file", "", "on a topology: cluster instance: the file the node keeps the cluster's state in, a file name in its working directory or an absolute path (default nodes-<port>.conf)")
	fs.StringVar(&c.server, "server", "", "one server of an instance split over several (servers: in the spec); default: the instance's own server")
}

func (c *configCommand) run(fs *flag.FlagSet, stdout, stderr io.Writer) int {
	if !c.requireInstance(fs, stderr) {
		return exitUsage
	}
	// Every flag is checked before anything is read or written: a value that
	// reaches the config unchecked can add directives of its own.
	for name, v := range map[string]string{"spec": c.spec, "instance": c.instance, "server": c.server} {
		if strings.ContainsFunc(v, unsafeRune) {
			fmt.Fprintf(stderr, "luagen config: --%s %q: no control character\n", name, v)
			return exitUsage
		}
	}
	if err := c.o.Validate(); err != nil {
		fmt.Fprintf(stderr, "luagen config: --%v\n", err)
		return exitUsage
	}
	spec, in, code := c.loadServer(c.server, stderr)
	if in == nil {
		return code
	}
	if c.o.ClusterConfigFile != "" && in.Topology != keyspec.TopologyCluster {
		fmt.Fprintf(stderr, "luagen config: --cluster-config-file: instance %s is %s in %s, not a cluster\n", in.Name, in.Topology, c.spec)
		return exitUsage
	}
	out, err := serverconf.RenderServer(spec, in, c.server, c.o)
	if err != nil {
		fmt.Fprintf(stderr, "luagen config: %v\n", err)
		return exitProblem
	}
	fmt.Fprint(stdout, out)
	return exitOK
}

// readPasswordFiles reads the --password-file USER=PATH arguments into
// aclfile password hashes. It never shows an argument or any part of one (a
// mistyped argument may be the password itself); it names an argument by its
// position, and a user only once the name is one of the instance's users. It
// refuses a malformed argument, an unknown user, a user named twice, and a
// password HashPassword refuses, and a file with mode bits beyond 0600 (readable
// by its group or others, or executable) unless allowReadable, which makes that
// a warning. admin, when not "", is one more user a file may be for
// (--admin-user).
func readPasswordFiles(spec *keyspec.Spec, in *keyspec.Instance, args []string, admin string, allowReadable bool, stderr io.Writer) (map[string]string, int, bool) {
	passwords := map[string]string{}
	first := map[string]int{}
	for i, pf := range args {
		n := i + 1
		user, path, ok := strings.Cut(pf, "=")
		if !ok || user == "" || path == "" {
			fmt.Fprintf(stderr, "luagen acl: --password-file #%d: want USER=PATH (the argument is not shown: it may be a password)\n", n)
			return nil, exitUsage, false
		}
		if findUser(spec, in, user) == nil && !slices.Contains(acl.GeneratedUsers(in), user) && user != admin {
			fmt.Fprintf(stderr, "luagen acl: --password-file #%d: its USER is not a user of %s (its users: %s)\n", n, in.Name, strings.Join(userNames(spec, in), ", "))
			return nil, exitProblem, false
		}
		if prev, dup := first[user]; dup {
			fmt.Fprintf(stderr, "luagen acl: --password-file #%d: user %s is named again (first by #%d): one password file a user\n", n, user, prev)
			return nil, exitUsage, false
		}
		first[user] = n
		if strings.ContainsFunc(path, unsafeRune) {
			fmt.Fprintf(stderr, "luagen acl: --password-file #%d (user %s): the path holds a control character\n", n, user)
			return nil, exitUsage, false
		}
		fi, err := os.Stat(path)
		if err != nil {
			fmt.Fprintf(stderr, "luagen acl: password file of %s (--password-file #%d): %v\n", user, n, errors.Unwrap(err))
			return nil, exitProblem, false
		}
		if !fi.Mode().IsRegular() {
			fmt.Fprintf(stderr, "luagen acl: password file of %s (--password-file #%d): not a regular file\n", user, n)
			return nil, exitProblem, false
		}
		if perm := fi.Mode().Perm(); perm&^0o600 != 0 {
			if !allowReadable {
				fmt.Fprintf(stderr, "luagen acl: password file of %s (--password-file #%d) has mode %04o, beyond 0600 (readable by its group or others, or executable): chmod 600 it, or pass --allow-readable\n", user, n, perm)
				return nil, exitProblem, false
			}
			fmt.Fprintf(stderr, "luagen acl: warning: password file of %s (--password-file #%d) has mode %04o, beyond 0600: allowed by --allow-readable\n", user, n, perm)
		}
		secret, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "luagen acl: password file of %s (--password-file #%d): %v\n", user, n, errors.Unwrap(err))
			return nil, exitProblem, false
		}
		hash, err := acl.HashPassword(secret)
		clear(secret)
		if err != nil {
			fmt.Fprintf(stderr, "luagen acl: password file of %s (--password-file #%d): %v\n", user, n, err)
			return nil, exitProblem, false
		}
		passwords[user] = hash
	}
	return passwords, 0, true
}

// unsafeRune reports a character no flag value may hold: a control character
// (a newline would start a directive of its own in a config file), or a Unicode
// format character (bidi overrides that make a terminal show another text).
func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
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
