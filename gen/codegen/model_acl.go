// acl.go's model: per ACL user of the instance, its name, SELECT decision and
// the key and channel patterns its ACL grants.

package codegen

import "fmt"

// aclFile is acl.go.
type aclFile struct {
	Users []aclUser
}

// aclUser is one user's constants and patterns.
type aclUser struct {
	Consts   []constDef // <User>User, <User>MaySelect
	Prefixed bool       // the patterns are functions of the deployment prefix
	Keys     globList
	Channels globList
}

// globList is <Name>: a user's ACL patterns, a var or, on a prefixed instance, a
// function of the prefix.
type globList struct {
	Doc   comment
	Name  string
	Globs []string
}

func (b *modelBuilder) aclFile() aclFile {
	var f aclFile
	for _, u := range b.spec.UsersOf(b.in) {
		n := exported(u.Name)
		in := ""
		if b.prefixed {
			in = " in deployment p"
		}
		f.Users = append(f.Users, aclUser{
			Consts: []constDef{
				{Doc: line(fmt.Sprintf("%sUser is the ACL user %s%s.", n, u.Name, cite(u.Source))), Name: n + "User", Value: strLit(u.Name)},
				{Doc: wrapped(fmt.Sprintf("%sMaySelect reports whether %s may run SELECT: %s.", n, u.Name, u.Select.Reason)), Name: n + "MaySelect", Value: boolLit(u.Select.Allow)},
			},
			Prefixed: b.prefixed,
			Keys:     globList{Doc: wrapped(fmt.Sprintf("%sKeyPatterns are the key patterns %s's ACL grants (~pattern)%s.", n, u.Name, in)), Name: n + "KeyPatterns", Globs: u.KeyGlobs()},
			Channels: globList{Doc: wrapped(fmt.Sprintf("%sChannelPatterns are the Pub/Sub channel patterns %s's ACL grants (&pattern)%s.", n, u.Name, in)), Name: n + "ChannelPatterns", Globs: u.ChannelGlobs()},
		})
		b.decls.add(fileACL, n+"User", n+"MaySelect", n+"KeyPatterns", n+"ChannelPatterns")
	}
	return f
}
