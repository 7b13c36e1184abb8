package tests

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/serverconf"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/specedit"
	"github.com/redis/go-redis/v9"
)

// securityRow is one row of docs/security.md's table: a command template and
// one cell per user kind.
type securityRow struct {
	line  int
	cmd   string // "" for the log-in row
	cells map[string]string
}

// The user kinds of the table's columns, in order.
var securityKinds = []string{"app", "loader", "operator", "monitor", "default"}

func securityTable(t *testing.T) []securityRow {
	t.Helper()
	b, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []securityRow
	in := false
	code := regexp.MustCompile("^`([^`]+)`$")
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| command |"):
			in = true
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		case !in || strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 1+len(securityKinds) {
			t.Fatalf("docs/security.md:%d: %d cells, want %d", i+1, len(cells), 1+len(securityKinds))
		}
		r := securityRow{line: i + 1, cells: map[string]string{}}
		first := strings.TrimSpace(cells[0])
		if m := code.FindStringSubmatch(first); m != nil {
			r.cmd = m[1]
		} else if first != "log in with its password" {
			t.Fatalf("docs/security.md:%d: the first cell %q is neither a command in backticks nor the log-in row", i+1, first)
		}
		for j, k := range securityKinds {
			r.cells[k] = strings.TrimSpace(cells[j+1])
		}
		rows = append(rows, r)
	}
	if len(rows) < 40 {
		t.Fatalf("docs/security.md: %d rows, want the whole table", len(rows))
	}
	return rows
}

// securityCase is one server the table is checked on.
type securityCase struct {
	name    string
	spec    *keyspec.Spec
	in      *keyspec.Instance
	server  string
	srcs    map[string]*compiler.Source
	prefix  string // the deployment's, on an instance with a deployment prefix
	other   string // another deployment's prefix
	cluster bool
}

func loadSecurityCase(t *testing.T, name, specPath string, specSrc []byte, luaDir, instance, server string, cluster bool) securityCase {
	t.Helper()
	var spec *keyspec.Spec
	var err error
	if specSrc != nil {
		spec, err = keyspec.Parse("keyspec.yaml", specSrc)
	} else {
		spec, err = keyspec.Load(specPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS(luaDir), "lua")
	if err != nil {
		t.Fatal(err)
	}
	c := securityCase{name: name, spec: spec, in: spec.Instance(instance), server: server, srcs: srcs, cluster: cluster}
	if c.in.Prefix != nil {
		c.prefix, c.other = "acme:production:", "acme:staging:"
	}
	return c
}

func securityPassword(user string) string { return "security-table-" + user + "-password" }

// start runs the case's server (or cluster) from the generated aclfile, the
// generated config where the spec has a server section, and the test admin.
func (c securityCase) start(t *testing.T) *redis.Client {
	t.Helper()
	hashes := map[string]string{}
	for _, u := range append(userNames(c.spec, c.in), acl.GeneratedUsers(c.in)...) {
		h, err := acl.HashPassword([]byte(securityPassword(u)))
		if err != nil {
			t.Fatal(err)
		}
		hashes[u] = h
	}
	users, _, err := acl.DeriveServer(c.spec, c.in, c.server, c.srcs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	if c.prefix != "" {
		users = acl.Deploy(users, c.prefix)
	}
	aclfile := acl.Render(users) + adminLine
	if c.cluster {
		cl := redistest.StartClusterWith(t, redistest.ClusterConfig{Primaries: 3, ACL: aclfile, AdminUser: "luagen_test_admin", AdminPassword: "admin-test-password"})
		return cl.Nodes[0].Admin()
	}
	opts := []redistest.Option{redistest.WithACL(aclfile), redistest.WithAdmin("luagen_test_admin", "admin-test-password")}
	if c.in.ServerNamed(c.server).Persistence != "" {
		opts = append(opts, redistest.WithConfigFor(func(port int, dir string) []string {
			conf, err := serverconf.RenderServer(c.spec, c.in, c.server, serverconf.Options{Bind: "127.0.0.1", Port: port, ACLFile: redistest.ACLPath(dir)})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Split(conf, "\n")
		}))
	}
	return redistest.Start(t, opts...).Admin()
}

func userNames(spec *keyspec.Spec, in *keyspec.Instance) []string {
	var out []string
	for _, u := range spec.UsersOf(in) {
		out = append(out, u.Name)
	}
	return out
}

// securityUser is one user of a case's aclfile, with what the table's
// conditions ask of it, from the spec and the scripts (not the aclfile).
type securityUser struct {
	name, kind string
	u          *keyspec.User // nil for a generated user
	calls      map[string]bool
	needs      map[string]bool // evalsha, evalsha_ro, fcall, fcall_ro
	key        string
	channel    string
}

func (c securityCase) users(t *testing.T, admin *redis.Client) []securityUser {
	t.Helper()
	names, err := admin.Do(context.Background(), "acl", "users").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	srv := c.in.ServerNamed(c.server)
	var out []securityUser
	for _, n := range names {
		su := securityUser{name: n, calls: map[string]bool{}, needs: map[string]bool{}}
		switch n {
		case "luagen_test_admin":
			continue
		case "default":
			su.kind = "default"
		case acl.LoaderUser(c.in):
			su.kind = "loader"
		case acl.OperatorUser(c.in):
			su.kind = "operator"
		case acl.MonitorUser(c.in):
			su.kind = "monitor"
		default:
			su.kind = "app"
			for _, u := range c.spec.UsersOf(c.in) {
				if u.Name == n {
					su.u = u
				}
			}
			if su.u == nil {
				t.Fatalf("%s: user %s is neither the spec's nor a generated one", c.name, n)
			}
		}
		out = append(out, su)
	}
	// What the scripts on this server call and need, per user, and the own key.
	for i := range out {
		su := &out[i]
		for _, s := range c.spec.ScriptsOf(c.in) {
			if s.DB == nil || s.DB.ServerOf() != srv || (su.u != nil && s.DB.User != su.u) {
				continue
			}
			for _, cmd := range c.srcs[s.Name].Commands {
				su.calls[cmd.Name] = true
			}
			if su.u == nil {
				continue
			}
			switch {
			case c.in.Functions() && s.ReadOnly:
				su.needs["fcall_ro"] = true
			case c.in.Functions():
				su.needs["fcall"] = true
			case s.ReadOnly:
				su.needs["evalsha_ro"] = true
			default:
				su.needs["evalsha"] = true
			}
			if su.key == "" || !s.ReadOnly {
				su.key = c.prefix + s.Keys[0].OneOf[0].Pattern.Example()
			}
		}
	}
	// The default user's key is the application users'.
	for i := range out {
		if out[i].key == "" {
			for _, o := range out {
				if o.key != "" {
					out[i].key = o.key
					break
				}
			}
		}
		if out[i].key == "" {
			out[i].key = c.prefix + "luagen:nokey"
		}
		out[i].channel = c.prefix + "luagen:nochannel"
		if u := out[i].u; u != nil {
			for _, ch := range c.spec.ChannelsOf(c.in) {
				for _, p := range u.ChannelPrefixes {
					if ch.ServerOf() == srv && p.Covers(ch.Pattern) {
						out[i].channel = c.prefix + ch.Pattern.Example()
					}
				}
			}
		}
	}
	return out
}

// expect evaluates a cell for user su.
func (c securityCase) expect(t *testing.T, r securityRow, su securityUser, cell string) bool {
	t.Helper()
	srv := c.in.ServerNamed(c.server)
	word := strings.ToLower(strings.Fields(r.cmd + " x")[0])
	switch cell {
	case "yes":
		return true
	case "no":
		return false
	case "if a script of it needs it":
		return su.needs[word]
	case "if its scripts call it":
		return su.calls[word]
	case "if its spec grants it":
		for _, ex := range su.u.ExtraCommands {
			if ex.Command == word && ex.Live() && (ex.LegacyDB == nil || ex.LegacyDB.ServerOf() == srv) {
				return true
			}
		}
		return false
	case "if select is allowed":
		return su.u.Select.Allow
	case "if it has channels":
		return su.channel != c.prefix+"luagen:nochannel"
	case "if evalsha mode":
		return !c.in.Functions()
	case "if functions mode":
		return c.in.Functions()
	case "if rueidis":
		return c.in.Client == keyspec.ClientRueidis
	case "if cluster":
		return c.in.Topology == keyspec.TopologyCluster
	case "if AOF and a script writes with it":
		return srv.Persistence == keyspec.PersistAOF && su.calls[word]
	}
	t.Fatalf("docs/security.md:%d: unknown cell %q", r.line, cell)
	return false
}

// args is the row's command for user su, its placeholders filled.
func (c securityCase) args(r securityRow, su securityUser) []any {
	other := "luagen:outside:key"
	if c.prefix != "" {
		other = c.other + strings.TrimPrefix(su.key, c.prefix)
	}
	fn := c.in.Name + "_version"
	repl := strings.NewReplacer("<key>", su.key, "<other-key>", other, "<channel>", su.channel,
		"<sha>", strings.Repeat("0", 40), "<function>", fn)
	var out []any
	for _, w := range strings.Fields(r.cmd) {
		if w == "<library>" {
			out = append(out, "#!lua name=luagen_probe\nredis.register_function('luagen_probe', function() return 1 end)")
			continue
		}
		out = append(out, repl.Replace(w))
	}
	return out
}

// The table of docs/security.md holds on every kind of server luagen
// generates (issue 21): each user of each aclfile gets exactly what its cells
// say, by ACL DRYRUN on a server started from the generated files, and only the
// generated users log in.
func TestSecurityTableHoldsOnEveryServer(t *testing.T) {
	t.Parallel()
	rows := securityTable(t)
	han, err := os.ReadFile("../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	split, err := specedit.MoveDB(han, specedit.HANRealtime)
	if err != nil {
		t.Fatal(err)
	}
	cases := []securityCase{
		loadSecurityCase(t, "vm1", "../keyspec.yaml", nil, "../lua", "vm1", "", false),
		loadSecurityCase(t, "vm2", "../keyspec.yaml", nil, "../lua", "vm2", "", false),
		loadSecurityCase(t, "elang", "../keyspec.yaml", nil, "../lua", "elang", "", false),
		loadSecurityCase(t, "vm1 split, its own server", "", split, "../lua", "vm1", "", false),
		loadSecurityCase(t, "vm1 split, realtime", "", split, "../lua", "vm1", "realtime", false),
		loadSecurityCase(t, "functions mode", functionsDir+"/keyspec.yaml", nil, functionsDir+"/lua", "app", "", false),
		loadSecurityCase(t, "client rueidis", "../gen/testdata/features/rueidis/keyspec.yaml", nil, "../gen/testdata/features/rueidis/lua", "sess", "", false),
		loadSecurityCase(t, "cacheservice sessions on a cluster", "../examples/cacheservice/keyspec.yaml", nil, "../examples/cacheservice/lua", "sessions", "", true),
	}
	kinds := map[string]int{}
	conditions := map[string]map[bool]int{} // each condition seen both ways
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			admin := c.start(t)
			users := c.users(t, admin)
			for _, su := range users {
				kinds[su.kind]++
				for _, r := range rows {
					cell := r.cells[su.kind]
					want := c.expect(t, r, su, cell)
					if strings.HasPrefix(cell, "if ") {
						if conditions[cell] == nil {
							conditions[cell] = map[bool]int{}
						}
						conditions[cell][want]++
					}
					if r.cmd == "" {
						o := admin.Options()
						cl := redis.NewClient(&redis.Options{Addr: o.Addr, Username: su.name, Password: securityPassword(su.name), MaxRetries: -1, DisableIdentity: true})
						err := cl.Ping(ctx).Err()
						_ = cl.Close()
						if got := err == nil || isNoPerm(err); got != want {
							t.Errorf("docs/security.md:%d: %s logs in: %v (%v), the table says %q", r.line, su.name, got, err, cell)
						}
						continue
					}
					args := c.args(r, su)
					v, err := admin.Do(ctx, append([]any{"acl", "dryrun", su.name}, args...)...).Text()
					got := err == nil && v == "OK"
					if got != want {
						t.Errorf("docs/security.md:%d: ACL DRYRUN %s %v: %q %v, the table says %q", r.line, su.name, args, v, err, cell)
					}
				}
			}
			for _, k := range securityKinds {
				if !slices.ContainsFunc(users, func(su securityUser) bool { return su.kind == k }) {
					t.Errorf("no %s user on this server", k)
				}
			}
		})
	}
	// Every condition held for some user and failed for another: none is
	// decided by the table alone.
	for cell, seen := range conditions {
		if seen[true] == 0 || seen[false] == 0 {
			t.Errorf("condition %q held %d times and failed %d times: the cases do not tell it", cell, seen[true], seen[false])
		}
	}
}
