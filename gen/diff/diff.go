// Package diff tells a reviewer what a change does to the scripts and the
// ACL: per script, the commands it calls now and no longer, the keys it may now
// read or write (and no longer), whether its Lua changed; per user, the
// aclfile lines that change. Markdown renders it for a pull request comment.
package diff

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyaccess"
	"github.com/hanchat/luagen/gen/snapshot"
)

// Script statuses.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// Report is what changed between two revisions.
type Report struct {
	Against string         `json:"against"` // how the older revision was named
	Scripts []ScriptChange `json:"scripts"`
	ACL     []ACLChange    `json:"acl"`
	// Notes are what could not be compared (an aclfile that cannot be derived).
	Notes []string `json:"notes,omitempty"`
}

// ScriptChange is one script added, removed or changed.
type ScriptChange struct {
	Instance string `json:"instance"`
	Name     string `json:"name"`
	Status   string `json:"status"`
	// Commands the script calls now and not before, and the reverse ("ZADD",
	// "OBJECT ENCODING").
	CommandsAdded   []string `json:"commands_added,omitempty"`
	CommandsRemoved []string `json:"commands_removed,omitempty"`
	// Keys it may now read or write, and no longer.
	KeysAdded   []KeyChange `json:"keys_added,omitempty"`
	KeysRemoved []KeyChange `json:"keys_removed,omitempty"`
	// OldSHA1 and NewSHA1 are the Lua's SHA1s ("" where the revision has none).
	OldSHA1 string `json:"old_sha1,omitempty"`
	NewSHA1 string `json:"new_sha1,omitempty"`
}

// LuaChanged reports whether the script's Lua differs.
func (s ScriptChange) LuaChanged() bool { return s.OldSHA1 != s.NewSHA1 }

// KeyChange is one way a script may reach one key.
type KeyChange struct {
	Mode    string `json:"mode"` // "read" or "write"
	Key     string `json:"key"`
	Pattern string `json:"pattern"`
}

// ACLChange is one user whose aclfile line changes.
type ACLChange struct {
	Instance string `json:"instance"`
	Server   string `json:"server,omitempty"`
	User     string `json:"user"`
	// Old and New are the lines; "" where the revision has no such user.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Granted and Revoked are the parts (commands, key and channel patterns) of
	// the line added and removed.
	Granted []string `json:"granted,omitempty"`
	Revoked []string `json:"revoked,omitempty"`
}

// Compare reports what changed from old to new.
func Compare(old, new *snapshot.Snapshot) *Report {
	r := &Report{Against: old.Label}
	r.Scripts = scripts(old, new)
	r.ACL, r.Notes = aclChanges(old, new)
	return r
}

// Empty reports whether nothing changed.
func (r *Report) Empty() bool { return len(r.Scripts) == 0 && len(r.ACL) == 0 && len(r.Notes) == 0 }

func scripts(old, new *snapshot.Snapshot) []ScriptChange {
	var out []ScriptChange
	seen := map[string]bool{}
	for _, ns := range new.Spec.Scripts {
		if !ns.Live() {
			continue
		}
		seen[ns.ID] = true
		os := old.Spec.Script(ns.ID)
		var oldSrc *compiler.Source
		if os != nil && os.Live() {
			oldSrc = old.Sources[os.ID]
		}
		c := change(ns.Instance.Name, ns.Name, oldSrc, new.Sources[ns.ID])
		switch {
		case os == nil || !os.Live():
			c.Status = Added
		case c.OldSHA1 == c.NewSHA1 && len(c.CommandsAdded)+len(c.CommandsRemoved)+len(c.KeysAdded)+len(c.KeysRemoved) == 0:
			continue
		default:
			c.Status = Changed
		}
		out = append(out, c)
	}
	for _, os := range old.Spec.Scripts {
		if !os.Live() || seen[os.ID] {
			continue
		}
		c := change(os.Instance.Name, os.Name, old.Sources[os.ID], nil)
		c.Status = Removed
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Instance != out[j].Instance {
			return out[i].Instance < out[j].Instance
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// change compares one script's two sources (either may be nil).
func change(instance, name string, o, n *compiler.Source) ScriptChange {
	c := ScriptChange{Instance: instance, Name: name}
	oc, nc := commands(o), commands(n)
	c.CommandsAdded, c.CommandsRemoved = minus(nc, oc), minus(oc, nc)
	ok, nk := keyChanges(o), keyChanges(n)
	c.KeysAdded, c.KeysRemoved = minusKeys(nk, ok), minusKeys(ok, nk)
	if o != nil {
		c.OldSHA1 = o.SHA1
	}
	if n != nil {
		c.NewSHA1 = n.SHA1
	}
	return c
}

func commands(src *compiler.Source) []string {
	if src == nil {
		return nil
	}
	var out []string
	for _, c := range src.Commands {
		if c != nil && !slices.Contains(out, c.Display()) {
			out = append(out, c.Display())
		}
	}
	sort.Strings(out)
	return out
}

func keyChanges(src *compiler.Source) []KeyChange {
	if src == nil {
		return nil
	}
	var out []KeyChange
	for _, u := range keyaccess.Uses(src) {
		if u.Read {
			out = append(out, KeyChange{Mode: "read", Key: u.Key.Name, Pattern: u.Key.Pattern.Raw})
		}
		if u.Write {
			out = append(out, KeyChange{Mode: "write", Key: u.Key.Name, Pattern: u.Key.Pattern.Raw})
		}
	}
	return out
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func minusKeys(a, b []KeyChange) []KeyChange {
	var out []KeyChange
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y KeyChange) bool { return y.Mode == x.Mode && y.Key == x.Key }) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// aclChanges derives both revisions' aclfiles, server by server, and lists
// the users whose line differs.
func aclChanges(old, new *snapshot.Snapshot) ([]ACLChange, []string) {
	var out []ACLChange
	var notes []string
	type server struct{ instance, name string }
	var servers []server
	for _, in := range new.Spec.Instances {
		for _, s := range in.ServerNames() {
			servers = append(servers, server{in.Name, s})
		}
	}
	for _, in := range old.Spec.Instances {
		for _, s := range in.ServerNames() {
			if !slices.Contains(servers, server{in.Name, s}) {
				servers = append(servers, server{in.Name, s})
			}
		}
	}
	for _, srv := range servers {
		ou, oerr := derive(old, srv.instance, srv.name)
		nu, nerr := derive(new, srv.instance, srv.name)
		if oerr != nil || nerr != nil {
			notes = append(notes, fmt.Sprintf("the aclfile of %s cannot be compared: %v", where(srv.instance, srv.name), firstErr(oerr, nerr)))
			continue
		}
		names := []string{}
		for _, u := range nu {
			names = append(names, u.Name)
		}
		for _, u := range ou {
			if !slices.Contains(names, u.Name) {
				names = append(names, u.Name)
			}
		}
		for _, name := range names {
			o, n := lineOf(ou, name), lineOf(nu, name)
			if o == n {
				continue
			}
			ot, nt := parts(o), parts(n)
			out = append(out, ACLChange{Instance: srv.instance, Server: srv.name, User: name, Old: o, New: n, Granted: minus(nt, ot), Revoked: minus(ot, nt)})
		}
	}
	return out, notes
}

// derive is the aclfile of one server of an instance (nil users when the
// revision has no such instance or server).
func derive(s *snapshot.Snapshot, instance, server string) ([]acl.User, error) {
	in := s.Spec.Instance(instance)
	if in == nil || in.ServerNamed(server) == nil {
		return nil, nil
	}
	users, _, err := acl.DeriveServer(s.Spec, in, server, s.Sources, nil)
	return users, err
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func where(instance, server string) string {
	if server == "" {
		return "instance " + instance
	}
	return "instance " + instance + " server " + server
}

func lineOf(users []acl.User, name string) string {
	for _, u := range users {
		if u.Name == name {
			return u.Line()
		}
	}
	return ""
}

// parts are the grants of an aclfile line: what follows "user NAME reset".
func parts(line string) []string {
	f := strings.Fields(line)
	if len(f) < 3 {
		return nil
	}
	var out []string
	for _, p := range f[3:] {
		switch p {
		case "resetchannels", "-@all":
			continue
		}
		out = append(out, p)
	}
	return out
}

// keyText names a key in Markdown: its name and pattern.
func keyText(k KeyChange) string { return fmt.Sprintf("`%s` (`%s`)", k.Key, k.Pattern) }
