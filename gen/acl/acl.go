// Package acl derives each ACL user's least privilege from the spec and a static
// reading of the Lua, and renders it as a Redis aclfile: the keys its scripts
// take (read-only where only EVALSHA_RO scripts take them), its channels, and
// exactly the commands its scripts call plus what the runtime needs. Grants come
// only from scripts the compiler accepts (Derive runs its checks again), and a
// subcommand is granted as cmd|sub, never as its container.
package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/rediscmd"
)

// ErrDangerous: a script calls a command no generated ACL grants.
var ErrDangerous = errors.New("dangerous command")

// ErrRefused: a script the compiler refuses; no grant is derived from it.
var ErrRefused = errors.New("script refused by the compiler")

// ErrForbidden: a script calls a command its instance's forbid rules forbid.
var ErrForbidden = errors.New("command forbidden by the instance")

// User is one derived ACL user.
type User struct {
	Name     string
	Off      bool     // cannot authenticate (the default user)
	Password string   // "#<sha256 hex>", or "" for a user that cannot log in
	Keys     []string // "~pattern" (read and write) or "%R~pattern" (read only)
	Channels []string // "&pattern"
	Commands []string // "+command" or "+command|subcommand", sorted
}

// Line is the user as one aclfile line.
func (u User) Line() string {
	state := "on"
	if u.Off {
		state = "off"
	}
	parts := []string{"user", u.Name, "reset", state}
	if u.Password != "" {
		parts = append(parts, u.Password)
	}
	parts = append(parts, u.Keys...)
	parts = append(parts, "resetchannels")
	parts = append(parts, u.Channels...)
	parts = append(parts, "-@all")
	parts = append(parts, u.Commands...)
	return strings.Join(parts, " ")
}

// DefaultLine is the default user of an instance without AOF: off, no password,
// nothing granted; nobody connects without a user of their own.
const DefaultLine = "user default reset off resetchannels -@all"

// aofDefault is the default user of an instance that persists with AOF. It stays
// off and passwordless, so nobody can log in as it, but Redis 7.0 replays the AOF
// as the default user and checks its ACL at each EXEC (redis/redis#14541, fixed
// upstream by #14545): a script's writes reach the AOF as MULTI ... EXEC, and
// without this grant a restart would silently drop every script with more than
// one write. It gets the instance's key patterns and the write commands its
// scripts call, plus PEXPIREAT (how Redis writes PEXPIRE to the AOF).
func aofDefault(users []User, writes map[string]bool) User {
	d := User{Name: "default", Off: true}
	seen := map[string]bool{}
	for _, u := range users {
		for _, k := range u.Keys {
			k = "~" + k[strings.Index(k, "~")+1:] // replay writes: read-write, also where users only read
			if !seen[k] {
				seen[k] = true
				d.Keys = append(d.Keys, k)
			}
		}
	}
	writes["pexpireat"] = true
	for c := range writes {
		d.Commands = append(d.Commands, "+"+c)
	}
	sort.Strings(d.Commands)
	return d
}

// Runtime commands the generated code and go-redis need beyond the scripts' own.
// HELLO and AUTH need no grant. An application user runs the declared scripts
// by their SHA1 and never loads code: SCRIPT LOAD belongs to the loader user.
const (
	cmdEvalSHA   = "evalsha"    // non-read-only scripts
	cmdEvalSHARO = "evalsha_ro" // read-only scripts
	cmdLoad      = "script|load"
	cmdFCall     = "fcall"         // functions mode: non-read-only scripts
	cmdFCallRO   = "fcall_ro"      // functions mode: read-only scripts, the library's version
	cmdFuncLoad  = "function|load" // functions mode: the deploy step (FUNCTION LOAD REPLACE)
	cmdFuncList  = "function|list" // functions mode: the library's version check (runtime.VerifyLibrary), which runs no code
	cmdPing      = "ping"          // health probes; go-redis's Pub/Sub health check
	cmdSelect    = "select"        // a URL ending in /N, N > 0
	cmdSlots     = "cluster|slots" // a cluster client (go-redis, rueidis) finds the slots' nodes
	cmdInfo      = "client|info"   // client: rueidis: rueidisbackend.New reads the database it selects
)

// clientCommands are what the instance's client itself sends beyond the calls
// (issue 21: rueidisbackend.New's CLIENT INFO was refused, and on a cluster
// neither client could read the slots): CLUSTER SLOTS on a cluster, whose
// clients map slots to nodes with it, and CLIENT INFO for client: rueidis,
// whose Conn reads the database it selects. They show the topology and the
// caller's own connection, never a key. CLIENT TRACKING is never among them:
// rueidis's client-side cache is off for generated code (DisableCache), and
// tracking in BCAST mode would tell a client the names of keys others write.
func clientCommands(in *keyspec.Instance) []string {
	var out []string
	if in.Topology == keyspec.TopologyCluster {
		out = append(out, cmdSlots)
	}
	if in.Client == keyspec.ClientRueidis {
		out = append(out, cmdInfo)
	}
	return out
}

// pubsub are the commands of a user with channels.
var pubsub = []string{"publish", "subscribe", "unsubscribe"}

// Derive computes the users of an instance from the spec and the scripts' Lua.
// password maps a user name to its password hash ("#<sha256 hex>"); a user
// without one gets none and cannot log in. Warnings are returned for the caller
// to print (a prefix no script needs is not granted, a user without password).
// On a split instance it is the aclfile of the instance's own server
// (DeriveServer with "").
func Derive(spec *keyspec.Spec, in *keyspec.Instance, srcs map[string]*compiler.Source, passwords map[string]string) ([]User, []string, error) {
	return DeriveServer(spec, in, "", srcs, passwords)
}

// ErrNoServer: DeriveServer was asked for a server the instance does not declare.
var ErrNoServer = errors.New("no such server")

// DeriveServer is Derive for one server of an instance split over several
// (servers: in the spec; "" is the instance's own server): the users of the
// databases on it, the key prefixes its scripts take, the channel prefixes of
// the channels placed on it, its scripts' commands and the extra commands that
// apply there. On an instance that is not split, "" is all of it.
func DeriveServer(spec *keyspec.Spec, in *keyspec.Instance, server string, srcs map[string]*compiler.Source, passwords map[string]string) ([]User, []string, error) {
	srv := in.ServerNamed(server)
	if srv == nil {
		return nil, nil, fmt.Errorf("instance %s: server %q: %w (declared: %s)", in.Name, server, ErrNoServer, strings.Join(in.ServerNames()[1:], ", "))
	}
	var users []User
	var warnings []string
	writes := map[string]bool{} // write commands the server's scripts call
	for _, u := range spec.UsersOf(in) {
		if in.Split() && !onServer(spec, in, u, srv) {
			continue
		}
		du := User{Name: u.Name, Password: passwords[u.Name]}
		if du.Password == "" {
			warnings = append(warnings, fmt.Sprintf("user %s has no password file: it cannot log in", u.Name))
		}
		cmds := map[string]bool{cmdPing: true}
		for _, c := range clientCommands(in) {
			cmds[c] = true
		}
		access := map[string]string{} // grant glob -> "R" or "RW"
		for _, s := range spec.ScriptsOf(in) {
			if s.DB == nil || s.DB.User != u || s.DB.ServerOf() != srv {
				continue
			}
			src := srcs[s.ID]
			if src == nil {
				return nil, nil, fmt.Errorf("script %s: no Lua loaded", s.Name)
			}
			commands, err := src.Recheck()
			if err != nil {
				// Load refuses these; a Source from anywhere else grants nothing either.
				return nil, nil, fmt.Errorf("script %s: %w: %w", s.Name, ErrRefused, err)
			}
			for _, c := range commands {
				if c == nil {
					return nil, nil, fmt.Errorf("script %s: a call whose command cannot be read: %w", s.Name, ErrRefused)
				}
				if why := keyspec.NeverGranted(c); why != "" {
					return nil, nil, fmt.Errorf("script %s calls %s (%s): %w", s.Name, c.Display(), why, ErrDangerous)
				}
				if base, _, _ := strings.Cut(c.Name, "|"); in.ForbidsCommand(base) != nil {
					fb := in.ForbidsCommand(base)
					return nil, nil, fmt.Errorf("script %s calls %s, which %s forbids (%s:%d: %s): %w", s.Name, c.Display(), in.Name, fb.File, fb.Line, fb.Source, ErrForbidden)
				}
				cmds[c.Name] = true // "get", or "object|encoding": never a container's every subcommand
				if c.Has(rediscmd.FlagWrite) {
					writes[c.Name] = true
				}
			}
			switch {
			case in.Functions() && s.ReadOnly:
				cmds[cmdFCallRO], cmds[cmdFuncList] = true, true
			case in.Functions():
				cmds[cmdFCall], cmds[cmdFuncList] = true, true
			case s.ReadOnly:
				cmds[cmdEvalSHARO] = true
			default:
				cmds[cmdEvalSHA] = true
			}
			// The keys it takes in KEYS, and (derived) those it builds and
			// those passed in ARGV.
			positions := append([]*keyspec.ScriptKey{}, s.Keys...)
			var built []*keyspec.Key
			for _, k := range s.Reach() {
				if !inKeysOf(s, k) {
					built = append(built, k)
				}
			}
			if len(built) > 0 {
				positions = append(positions, &keyspec.ScriptKey{Name: "derived", OneOf: built})
			}
			for _, pos := range positions {
				names := pos.OneOf
				if pos.Channel != nil {
					// EVALSHA checks every KEYS element against the key
					// patterns, a channel's name too.
					names = []*keyspec.Key{{Name: "channel " + pos.Channel.Name, Pattern: pos.Channel.Pattern, DB: s.DB}}
				}
				for _, k := range names {
					p := coveringPrefix(u, k)
					if p == nil {
						return nil, nil, fmt.Errorf("key %s of script %s is outside every prefix of %s", k.Name, s.ID, u.Name)
					}
					g := p.Glob()
					if p.Prefix == "" && p.Deployment {
						g = k.Pattern.Family() // the deployment's family, never all of it
					}
					// EVALSHA declares its keys read-write; only EVALSHA_RO takes read-only keys.
					if s.ReadOnly && access[g] == "" {
						access[g] = "R"
					} else if !s.ReadOnly {
						access[g] = "RW"
					}
				}
			}
		}
		for _, p := range u.LivePrefixes() {
			for _, g := range p.Globs() {
				switch access[g] {
				case "R":
					du.Keys = append(du.Keys, "%R~"+g)
				case "RW":
					du.Keys = append(du.Keys, "~"+g)
				default:
					if !in.Split() || coversKeyOn(spec, in, p, srv) {
						warnings = append(warnings, fmt.Sprintf("user %s: prefix %s is taken by no script; not granted", u.Name, g))
					}
				}
			}
		}
		for _, p := range u.ChannelPrefixes {
			if !in.Split() || coversChannelOn(spec, in, p, srv) {
				for _, g := range p.Globs() {
					du.Channels = append(du.Channels, "&"+g)
				}
				if len(p.Globs()) == 0 {
					warnings = append(warnings, fmt.Sprintf("user %s: channel prefix \"\" (the whole deployment) covers no declared channel; nothing granted", u.Name))
				}
			}
		}
		if len(du.Channels) > 0 {
			for _, c := range pubsub {
				cmds[c] = true
			}
		}
		if u.Select.Allow {
			cmds[cmdSelect] = true
		}
		for _, ex := range u.ExtraCommands {
			if ex.Live() && (ex.LegacyDB == nil || ex.LegacyDB.ServerOf() == srv) {
				cmds[ex.Command] = true
			}
		}
		for c := range cmds {
			du.Commands = append(du.Commands, "+"+c)
		}
		sort.Strings(du.Commands)
		users = append(users, du)
	}
	def := User{Name: "default", Off: true}
	if srv.Persistence == keyspec.PersistAOF {
		def = aofDefault(users, writes)
	}
	for _, r := range roles(in) {
		if specUser(spec, r.name) {
			return nil, nil, fmt.Errorf("user %s: the name of %s's generated %s user: %w", r.name, in.Name, r.role, ErrReservedUser)
		}
		du := User{Name: r.name, Password: passwords[r.name], Commands: r.commands}
		if du.Password == "" {
			warnings = append(warnings, fmt.Sprintf("user %s (%s) has no password file: it cannot log in", r.name, r.role))
		}
		users = append(users, du)
	}
	return append([]User{def}, users...), warnings, nil
}

// ErrReservedUser: a spec user has the name of a user luagen generates itself.
var ErrReservedUser = errors.New("name reserved for a generated user")

// The roles of the users every instance's aclfile has besides the spec's.
const (
	RoleLoader   = "loader"
	RoleOperator = "operator"
	RoleMonitor  = "monitor"
)

// LoaderUser is the name of the instance's loader user: SCRIPT LOAD (and PING),
// nothing else; in functions mode FUNCTION LOAD and FUNCTION LIST (the version
// check reads the library back; the loader runs no code) instead of SCRIPT LOAD. It loads the declared scripts at deploy time, and a service that
// holds its credential recovers NOSCRIPT with it (runtime.WithLoader): that
// credential can load any code, so a service holding it is as trusted as the
// deploy job (docs/operators.md, "Who may load code").
func LoaderUser(in *keyspec.Instance) string { return in.Name + "_" + RoleLoader }

// OperatorUser is the name of the instance's operator user: SCRIPT KILL and
// FUNCTION KILL (and PING), to stop a script that runs past
// busy-reply-threshold; it reads and writes no key and loads no code.
func OperatorUser(in *keyspec.Instance) string { return in.Name + "_" + RoleOperator }

// MonitorUser is the name of the instance's monitoring user: CLIENT LIST (and
// PING), for samplers that read a connection's server-side state, such as the
// Pub/Sub output-buffer sampler a service runs (a client logged in as this user); it reads
// and writes no key, kills no client and runs no code. CLIENT LIST shows every
// connection's address, name and last command (never its arguments), which is
// why no application user gets it.
func MonitorUser(in *keyspec.Instance) string { return in.Name + "_" + RoleMonitor }

// GeneratedUsers are the names of the users Derive adds to every aclfile of
// in, besides the spec's: its loader, its operator and its monitor.
func GeneratedUsers(in *keyspec.Instance) []string {
	return []string{LoaderUser(in), OperatorUser(in), MonitorUser(in)}
}

// ErrBadAdminUser: an admin user's name that is not a user name, or that is
// already one of the aclfile's users.
var ErrBadAdminUser = errors.New("invalid admin user")

// adminNameRe is the name of an admin user.
var adminNameRe = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// CheckAdminName checks the name of an admin user of in's aclfile before
// anything is derived: [a-z][a-z0-9_-]* (at most 64), and neither default,
// one of the spec's users of in nor one of its generated users.
func CheckAdminName(spec *keyspec.Spec, in *keyspec.Instance, name string) error {
	if !adminNameRe.MatchString(name) {
		return fmt.Errorf("admin user %q: want [a-z][a-z0-9_-]*, at most 64 characters: %w", name, ErrBadAdminUser)
	}
	taken := append([]string{"default"}, GeneratedUsers(in)...)
	for _, u := range spec.UsersOf(in) {
		taken = append(taken, u.Name)
	}
	for _, t := range taken {
		if t == name {
			return fmt.Errorf("admin user %q: already a user of the aclfile: name it otherwise: %w", name, ErrBadAdminUser)
		}
	}
	return nil
}

// AdminUser is the user that may stop the server: SHUTDOWN (and PING),
// nothing else (no key, no channel, no script, no CONFIG or ACL). Every other
// user of a generated aclfile is refused SHUTDOWN and the default user is
// off, so without it a server started from the generated files stops only by
// a signal to its process; a test or an operator that can reach the port but
// not the process asks with this user (SHUTDOWN, or SHUTDOWN NOSAVE). It is
// made only on request: name must be [a-z][a-z0-9_-]* (at most 64) and none
// of users, and password is its "#<sha256 hex>" (HashPassword), required: a
// user that can stop the server logs in with a password or not at all.
func AdminUser(users []User, name, password string) (User, error) {
	if !adminNameRe.MatchString(name) {
		return User{}, fmt.Errorf("admin user %q: want [a-z][a-z0-9_-]*, at most 64 characters: %w", name, ErrBadAdminUser)
	}
	for _, u := range users {
		if u.Name == name {
			return User{}, fmt.Errorf("admin user %q: already a user of the aclfile: name it otherwise: %w", name, ErrBadAdminUser)
		}
	}
	if password == "" {
		return User{}, fmt.Errorf("admin user %q has no password: give it one (--password-file %s=PATH): %w", name, name, ErrBadAdminUser)
	}
	return User{Name: name, Password: password, Commands: []string{"+" + cmdPing, "+shutdown"}}, nil
}

type generatedRole struct {
	name, role string
	commands   []string
}

// roles are the generated users of in, with their exact commands.
func roles(in *keyspec.Instance) []generatedRole {
	loader := []string{"+" + cmdPing, "+" + cmdLoad}
	if in.Functions() {
		// FUNCTION LOAD REPLACE, and FUNCTION LIST to read the library back for
		// the version check: the loader runs no code (no FCALL, no FCALL_RO).
		loader = []string{"+" + cmdFuncList, "+" + cmdFuncLoad, "+" + cmdPing}
	}
	// The deploy step runs the instance's client too (luagen load --cluster,
	// rueidisbackend.PreloadNodes).
	for _, c := range clientCommands(in) {
		loader = append(loader, "+"+c)
	}
	sort.Strings(loader)
	return []generatedRole{
		{LoaderUser(in), RoleLoader, loader},
		{OperatorUser(in), RoleOperator, []string{"+function|kill", "+" + cmdPing, "+script|kill"}},
		{MonitorUser(in), RoleMonitor, []string{"+client|list", "+" + cmdPing}},
	}
}

func specUser(spec *keyspec.Spec, name string) bool {
	for _, u := range spec.Users {
		if u.Name == name {
			return true
		}
	}
	return false
}

// onServer reports whether user u has anything on srv: a live database, or a
// channel prefix covering a channel placed there.
func onServer(spec *keyspec.Spec, in *keyspec.Instance, u *keyspec.User, srv *keyspec.Server) bool {
	for _, d := range in.DBsOn(srv) {
		if d.User == u {
			return true
		}
	}
	for _, p := range u.ChannelPrefixes {
		if coversChannelOn(spec, in, p, srv) {
			return true
		}
	}
	return false
}

// coversKeyOn reports whether p grants a live key of a database on srv.
func coversKeyOn(spec *keyspec.Spec, in *keyspec.Instance, p *keyspec.Prefix, srv *keyspec.Server) bool {
	for _, k := range spec.KeysOf(in) {
		if k.DB.ServerOf() == srv && p.Covers(k.Pattern) {
			return true
		}
	}
	return false
}

// coversChannelOn reports whether p grants a channel placed on srv.
func coversChannelOn(spec *keyspec.Spec, in *keyspec.Instance, p *keyspec.Prefix, srv *keyspec.Server) bool {
	for _, c := range spec.ChannelsOf(in) {
		if c.ServerOf() == srv && p.Covers(c.Pattern) {
			return true
		}
	}
	return false
}

// coveringPrefix is the user's longest live prefix that grants every name of k.
func coveringPrefix(u *keyspec.User, k *keyspec.Key) *keyspec.Prefix {
	var best *keyspec.Prefix
	for _, p := range u.LivePrefixes() {
		if p.LegacyDB != nil && p.LegacyDB != k.DB {
			continue
		}
		if p.Covers(k.Pattern) && (best == nil || len(p.Prefix) > len(best.Prefix)) {
			best = p
		}
	}
	return best
}

// Render is the aclfile: one line per user, the default user (always off) first.
// Redis's aclfile has no comments, so nothing else is written.
func Render(users []User) string {
	var b strings.Builder
	for _, u := range users {
		b.WriteString(u.Line() + "\n")
	}
	return b.String()
}

// MinPasswordLen is the shortest password HashPassword accepts, in bytes. A
// password of an application user is made by a machine (ACL GENPASS makes 64 hex
// characters), so a short one is a mistake: an empty file, a placeholder.
const MinPasswordLen = 16

// ErrWeakPassword: a password file whose password HashPassword refuses.
var ErrWeakPassword = errors.New("weak or malformed password")

// HashPassword is the aclfile form of a password: '#' and its SHA-256 in hex.
// Trailing newlines of a password file are not part of the password. An empty
// or blank password, one shorter than MinPasswordLen, one with spaces around it
// or with a control character is refused (ErrWeakPassword); the error never
// shows the password or any part of it.
func HashPassword(secret []byte) (string, error) {
	s := strings.TrimRight(string(secret), "\r\n")
	switch {
	case strings.TrimSpace(s) == "":
		return "", fmt.Errorf("the password file is empty or blank: %w", ErrWeakPassword)
	case strings.TrimSpace(s) != s:
		return "", fmt.Errorf("the password has spaces around it (the server would expect them too): %w", ErrWeakPassword)
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", fmt.Errorf("the password holds a control character (a second line?): %w", ErrWeakPassword)
	case len(s) < MinPasswordLen:
		return "", fmt.Errorf("the password is shorter than %d bytes: %w", MinPasswordLen, ErrWeakPassword)
	}
	sum := sha256.Sum256([]byte(s))
	return "#" + hex.EncodeToString(sum[:]), nil
}

// inKeysOf reports whether a KEYS position of s takes k.
func inKeysOf(s *keyspec.Script, k *keyspec.Key) bool {
	for _, pos := range s.Keys {
		for _, o := range pos.OneOf {
			if o == k {
				return true
			}
		}
	}
	return false
}
