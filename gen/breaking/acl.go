package breaking

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// aclPair is the aclfile of one server of an instance at both revisions.
type aclPair struct {
	instance string
	server   string // "" for the instance's own server
	pos      keyspec.Pos
	old, new []acl.User
	oldErr   error // the previous aclfile could not be derived
	newErr   error
}

// acls derives the aclfile of every server both revisions have, once.
func (c *comparison) acls() []aclPair {
	if c.aclPairs != nil {
		return *c.aclPairs
	}
	var out []aclPair
	for _, ip := range c.instances() {
		if ip.new == nil {
			continue
		}
		for _, srv := range ip.old.ServerNames() {
			if ip.new.ServerNamed(srv) == nil {
				continue // its databases moved: db-server-moved says so
			}
			p := aclPair{instance: ip.new.Name, server: srv, pos: ip.new.Pos}
			p.old, _, p.oldErr = acl.DeriveServer(c.old.Spec, ip.old, srv, c.old.Sources, nil)
			p.new, _, p.newErr = acl.DeriveServer(c.new.Spec, ip.new, srv, c.new.Sources, nil)
			out = append(out, p)
		}
	}
	c.aclPairs = &out
	return out
}

func (p aclPair) where() string {
	if p.server == "" {
		return "instance " + p.instance
	}
	return fmt.Sprintf("instance %s server %s", p.instance, p.server)
}

func userNamed(users []acl.User, name string) *acl.User {
	for i := range users {
		if users[i].Name == name {
			return &users[i]
		}
	}
	return nil
}

// userPos is where the spec declares user name, or else the instance.
func userPos(spec *keyspec.Spec, name string, fallback keyspec.Pos) keyspec.Pos {
	for _, u := range spec.Users {
		if u.Name == name {
			return u.Pos
		}
	}
	return fallback
}

func userRemoved(c *comparison, r *reporter) {
	for _, p := range c.acls() {
		if p.oldErr != nil || p.newErr != nil {
			continue
		}
		for _, ou := range p.old {
			if userNamed(p.new, ou.Name) == nil {
				pos := userPos(c.old.Spec, ou.Name, p.pos)
				r.at(pos, userEntry(ou.Name), "user %s is gone from the aclfile of %s: processes of the previous release authenticate as it", ou.Name, p.where())
			}
		}
	}
}

func grantLost(c *comparison, r *reporter) {
	for _, p := range c.acls() {
		switch {
		case p.oldErr != nil:
			r.with(Warning, p.pos, instanceEntry(p.instance), "the previous aclfile of %s cannot be derived (%v): its grants are not compared", p.where(), p.oldErr)
			continue
		case p.newErr != nil:
			r.with(Warning, p.pos, instanceEntry(p.instance), "the new aclfile of %s cannot be derived (%v): its grants are not compared", p.where(), p.newErr)
			continue
		}
		for _, ou := range p.old {
			nu := userNamed(p.new, ou.Name)
			if nu == nil {
				continue // user-removed
			}
			var lost []string
			for _, cmd := range ou.Commands {
				if !slices.Contains(nu.Commands, cmd) {
					lost = append(lost, cmd+needs(c, ou.Name, strings.TrimPrefix(cmd, "+")))
				}
			}
			for _, k := range ou.Keys {
				if !keyCovered(k, nu.Keys) {
					lost = append(lost, k)
				}
			}
			for _, ch := range ou.Channels {
				if !globCovered(strings.TrimPrefix(ch, "&"), trimAll(nu.Channels, "&")) {
					lost = append(lost, ch)
				}
			}
			switch {
			case len(lost) == 0:
			case ou.Name == "default":
				// Redis 7.0 replays the AOF as the default user (gen/acl).
				r.at(p.pos, userEntry(ou.Name), "the default user of %s loses %s: Redis replays the AOF as the default user, so after a restart the previous release's writes in the AOF fail to replay", p.where(), strings.Join(lost, ", "))
			default:
				r.at(userPos(c.new.Spec, ou.Name, p.pos), userEntry(ou.Name), "user %s loses %s on %s: the previous release's scripts and code get NOPERM for them during the rolling deploy", ou.Name, strings.Join(lost, ", "), p.where())
			}
		}
	}
}

// needs names the previous release's scripts of user that call cmd:
// " (script a, b)", or "" (the runtime or extra_commands need it).
func needs(c *comparison, user, cmd string) string {
	var scripts []string
	for _, s := range c.old.Spec.Scripts {
		if !s.Live() || s.DB == nil || s.DB.User == nil || s.DB.User.Name != user {
			continue
		}
		if src := c.old.Sources[s.ID]; src != nil && calls(src, cmd) {
			scripts = append(scripts, s.Name)
		}
	}
	if len(scripts) == 0 {
		return ""
	}
	return " (script " + strings.Join(scripts, ", ") + ")"
}

func calls(src *compiler.Source, cmd string) bool {
	for _, c := range src.Commands {
		if c != nil && c.Name == cmd {
			return true
		}
	}
	return false
}

func trimAll(globs []string, prefix string) []string {
	out := make([]string, len(globs))
	for i, g := range globs {
		out[i] = strings.TrimPrefix(g, prefix)
	}
	return out
}

// keyCovered reports whether an old key grant ("~glob" read-write, "%R~glob"
// read-only) is still granted by one of the new ones, with at least its access.
func keyCovered(old string, news []string) bool {
	readOnly := strings.HasPrefix(old, "%R~")
	og := old[strings.Index(old, "~")+1:]
	for _, n := range news {
		nRO := strings.HasPrefix(n, "%R~")
		if nRO && !readOnly {
			continue
		}
		if globCovered(og, []string{n[strings.Index(n, "~")+1:]}) {
			return true
		}
	}
	return false
}

// globCovered reports whether every name glob o matches is matched by one of
// news: the same glob, or a prefix glob ("shop:*") whose prefix starts o's
// literal part.
func globCovered(o string, news []string) bool {
	lit := o
	if i := strings.IndexAny(o, "*?[{"); i >= 0 {
		lit = o[:i]
	}
	for _, n := range news {
		if n == o {
			return true
		}
		if strings.HasSuffix(n, "*") && !strings.ContainsAny(n[:len(n)-1], "*?[\\") && strings.HasPrefix(lit, n[:len(n)-1]) {
			return true
		}
	}
	return false
}
