package acl

import "strings"

// Deploy binds the users of an instance with a deployment prefix to one
// deployment: every key pattern (~glob, %R~glob) and channel pattern (&glob),
// relative to the deployment prefix in the spec, gets prefix in front, so the
// aclfile grants exactly that deployment's names (~acme:production:*). The
// caller checks prefix first (runtime.CheckPrefix); Derive's output for such an
// instance is never rendered without it.
func Deploy(users []User, prefix string) []User {
	out := make([]User, len(users))
	for i, u := range users {
		u.Keys = rebase(u.Keys, prefix, "%R~", "~")
		u.Channels = rebase(u.Channels, prefix, "&")
		out[i] = u
	}
	return out
}

func rebase(globs []string, prefix string, marks ...string) []string {
	out := make([]string, len(globs))
	for i, g := range globs {
		out[i] = g
		for _, m := range marks {
			if rest, ok := strings.CutPrefix(g, m); ok {
				out[i] = m + prefix + rest
				break
			}
		}
	}
	return out
}
