package tests

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/runtime"
)

// globsMeet reports whether some name matches both ACL globs a and b, where
// '*' matches any text and every other byte itself (the patterns luagen writes
// hold no '?', '[' or '\'; a hash tag's braces are literal).
func globsMeet(a, b string) bool {
	memo := map[[2]int]bool{}
	seen := map[[2]int]bool{}
	var meet func(i, j int) bool
	meet = func(i, j int) bool {
		k := [2]int{i, j}
		if seen[k] {
			return memo[k]
		}
		seen[k] = true
		var r bool
		switch {
		case i == len(a) && j == len(b):
			r = true
		case i < len(a) && a[i] == '*':
			r = meet(i+1, j) || (j < len(b) && meet(i, j+1))
		case j < len(b) && b[j] == '*':
			r = meet(i, j+1) || (i < len(a) && meet(i+1, j))
		case i < len(a) && j < len(b) && a[i] == b[j]:
			r = meet(i+1, j+1)
		}
		memo[k] = r
		return r
	}
	return meet(0, 0)
}

func TestGlobsMeet(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"shop.example.com:*", "shop.example.com:eu:session:*:data", true},
		{"shop.example.com:session:*", "shop.example.com:eu:session:*:data", false},
		{"a:cache:*", "a:cache:x", true},
		{"a:cache:*", "a:cachex", false},
		{"a:*:x", "a:b:*", true},
		{"a:lock:*", "a:eu:lock:*", false},
		{"x", "x", true},
		{"x", "x:*", false},
	} {
		if got := globsMeet(c.a, c.b); got != c.want {
			t.Errorf("globsMeet(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// deployments are the instances with a deployment prefix whose aclfiles the
// fuzz test compares: elang (its prefixes made by the generated package) and
// both of examples/cacheservice's (made by runtime with the spec's reserved
// names, as their generated packages do).
var deployments = sync.OnceValues(func() ([]*deploymentSpec, error) {
	var out []*deploymentSpec
	for _, c := range []struct{ spec, lua, instance string }{
		{"../keyspec.yaml", "../lua", "elang"},
		{"../examples/cacheservice/keyspec.yaml", "../examples/cacheservice/lua", "app"},
		{"../examples/cacheservice/keyspec.yaml", "../examples/cacheservice/lua", "sessions"},
	} {
		spec, err := keyspec.Load(c.spec)
		if err != nil {
			return nil, err
		}
		in := spec.Instance(c.instance)
		srcs, err := compiler.Load(spec, os.DirFS(c.lua), "lua")
		if err != nil {
			return nil, err
		}
		users, _, err := acl.Derive(spec, in, srcs, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, &deploymentSpec{spec: spec, in: in, users: users})
	}
	// A spec of the name forms libraries write (a placeholder inside a segment,
	// a fixed hash tag, separators other than ':', a one-literal key), with no
	// scripts: its grants are every pattern its users' prefixes stand for.
	spec, err := keyspec.Parse("families.yaml", []byte(familiesSpec))
	if err != nil {
		return nil, err
	}
	in := spec.Instance("fam")
	var users []acl.User
	for _, u := range spec.UsersOf(in) {
		au := acl.User{Name: u.Name}
		for _, g := range u.KeyGlobs() {
			au.Keys = append(au.Keys, "~"+g)
		}
		for _, g := range u.ChannelGlobs() {
			au.Channels = append(au.Channels, "&"+g)
		}
		users = append(users, au)
	}
	return append(out, &deploymentSpec{spec: spec, in: in, users: users}), nil
})

// familiesSpec is the fuzz test's spec of name forms other than a:b:{c}.
const familiesSpec = `version: 1
instances:
  fam:
    topology: standalone
    deployment_prefix: {env: FAM_PREFIX, default_from: APP_URL, max_len: 64}
    dbs:
      db0: {index: 0, url_env: FAM_URL, user: app}
      db1: {index: 1, url_env: FAM_JOBS_URL, user: jobs}
users:
  app:
    instance: fam
    select: {allow: false, reason: db0}
    key_prefixes:
      - {prefix: "", reason: every key of its database}
    channel_prefixes:
      - {prefix: "", reason: every channel}
  jobs:
    instance: fam
    select: {allow: true, reason: db1}
    key_prefixes:
      - {prefix: "q-", reason: the queues}
      - {prefix: "{bull}:", reason: a fixed hash tag}
keys:
  settings:
    db: fam.db0
    kind: cache
    pattern: "b_{id}_settings"
    params: {id: {type: uuid}}
    value: [string]
    ttl: {rule: fixed, value: 1h}
  counter:
    db: fam.db0
    kind: counter
    pattern: "counter"
    value: [counter]
    ttl: {rule: fixed, value: 1h}
  entry:
    db: fam.db0
    kind: cache
    pattern: "cache:{name}"
    params: {name: {type: name}}
    value: [string]
    ttl: {rule: fixed, value: 1h}
  queue:
    db: fam.db1
    kind: cache
    pattern: "q-{name}"
    params: {name: {type: name}}
    value: [string]
    ttl: {rule: fixed, value: 1h}
  wait:
    db: fam.db1
    kind: cache
    pattern: "\\{bull\\}:{queue}:wait"
    params: {queue: {type: name}}
    value: [string]
    ttl: {rule: fixed, value: 1h}
channels:
  room:
    instance: fam
    pattern: "ev.{room}"
    params: {room: {type: name}}
    max_bytes: 100
scripts: {}
`

type deploymentSpec struct {
	spec  *keyspec.Spec
	in    *keyspec.Instance
	users []acl.User
}

// grants are the key and channel globs the aclfile of deployment p grants
// (every user), as luagen acl --prefix p binds them.
func (e *deploymentSpec) grants(p string) (keys, channels []string) {
	for _, u := range acl.Deploy(e.users, p) {
		for _, k := range u.Keys {
			keys = append(keys, k[strings.Index(k, "~")+1:])
		}
		for _, c := range u.Channels {
			channels = append(channels, strings.TrimPrefix(c, "&"))
		}
	}
	return keys, channels
}

// names are the key and channel globs of deployment p's namespace.
func (e *deploymentSpec) names(p string) (keys, channels []string) {
	for _, k := range e.spec.KeysOf(e.in) {
		keys = append(keys, p+k.Pattern.Glob())
	}
	for _, c := range e.spec.ChannelsOf(e.in) {
		channels = append(channels, p+c.Pattern.Glob())
	}
	return keys, channels
}

// candidates are the deployment prefixes the tool makes of s: as APP_URL, as
// an explicit prefix, and the test prefix of each.
func (e *deploymentSpec) candidates(s string) []string {
	var out []string
	add := func(p string, err error) {
		if err != nil {
			return
		}
		out = append(out, p)
		if tp, err := runtime.TestPrefix(p, e.in.Prefix.MaxLen); err == nil {
			out = append(out, tp)
		}
	}
	if e.in.Name == "elang" {
		p, err := elang.PrefixFromURL(s)
		add(p.String(), err)
		p, err = elang.NewPrefix(s)
		add(p.String(), err)
		if p, err := elang.NewPrefix(s); err == nil {
			tp, err := p.Test()
			if err != nil || !slices.Contains(out, tp.String()) {
				panic("the generated Test and runtime.TestPrefix differ")
			}
		}
		return out
	}
	add(runtime.PrefixFromURL(s, e.in.Prefix.MaxLen, e.in.Prefix.Reserved...))
	if err := runtime.CheckPrefix(s, e.in.Prefix.MaxLen, e.in.Prefix.Reserved...); err == nil {
		add(s, nil)
	}
	return out
}

// For any two distinct deployment prefixes the tool produces (from APP_URL) or
// accepts (explicit, and the test prefixes of both), neither's aclfile grants
// a key or a channel of the other's namespace (issue 21: shop.example.com:'s
// ~shop.example.com:* reached shop.example.com:eu:'s sessions). The seed corpus
// runs in every go test; go test -fuzz FuzzDeploymentPrefixesDoNotNest ./tests
// searches further.
func FuzzDeploymentPrefixesDoNotNest(f *testing.F) {
	for _, pair := range [][2]string{
		{"https://shop.example.com/", "https://shop.example.com/eu"},
		{"https://shop.example.com/", "https://shop.example.com/eu/de"},
		{"acme:", "acme:production:"},
		{"acme:production:", "acme:production:eu:"},
		{"acme:production:", "acme:staging:"},
		{"https://acme.example/", "acme.example:session:"},
		{"https://acme.example/", "https://acme.example/cache"},
		{"https://acme.example/", "https://acme.example/lock/x"},
		{"acme:", "acme:outbox:"},
		{"acme:", "acme:ratelimit:x:"},
		{"test:", "x:"},
		{"https://test/", "acme:"},
		{"acme:", "test:acme:"},
		{"http://localhost:8080/acme", "localhost-8080:acme:app:"},
		{"https://app.example/", "app.example:recent:"},
		{"https://app.example/", "https://app.example/tags/x"},
		{"acme:", "acme:b_x:"},
		{"acme:", "acme:q-1:"},
		{"acme:", "acme:counter:"},
		{"acme:", "acme:ev.room:"},
		{"https://fam.example/", "https://fam.example/b_eu"},
		{"a:", "a:a:"},
		{"https://example.com/a%20b", "example.com:a-b:"},
	} {
		f.Add(pair[0], pair[1])
	}
	specs, err := deployments()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, e := range specs {
			for _, pa := range e.candidates(a) {
				for _, pb := range e.candidates(b) {
					if pa != pb {
						e.apart(t, pa, pb)
						e.apart(t, pb, pa)
					}
				}
			}
		}
	})
}

// apart fails t when an aclfile of deployment pa grants a name of deployment pb.
func (e *deploymentSpec) apart(t *testing.T, pa, pb string) {
	gk, gc := e.grants(pa)
	ok, oc := e.grants(pb)
	nk, nc := e.names(pb)
	for _, g := range gk {
		for _, n := range append(ok, nk...) {
			if globsMeet(g, n) {
				t.Fatalf("%s: deployment %q grants ~%s, which reaches %s of deployment %q", e.in.Name, pa, g, n, pb)
			}
		}
	}
	for _, g := range gc {
		for _, n := range append(oc, nc...) {
			if globsMeet(g, n) {
				t.Fatalf("%s: deployment %q grants &%s, which reaches channel %s of deployment %q", e.in.Name, pa, g, n, pb)
			}
		}
	}
}
