package luatest

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// ScripterFor is a Scripter that checks every run of a script of the spec
// against what the spec says of it, at run time, where the static reading could
// not: each key the script touched must match a pattern it may reach (the keys
// of its KEYS positions, its ARGV keys and its derived keys; a value read from
// Redis in a derived key's place is checked against its placeholder here),
// each channel it published to a channel it may reach, a key declared with a
// TTL rule must have a TTL after the script wrote it (a key declared ttl: none
// need not), and a list or stream with a declared max_len may hold no more.
// A violation names the script, its file and Lua line, and the key.
//
// srcs are the spec's scripts as compiler.Load returns them (scripts are known
// by the SHA1 of their Lua); prefix is the deployment prefix every key and
// channel name starts with ("" for an instance without one). A script the spec
// does not declare is checked by the harness's default rules (Result.Violations).
func (s *Server) ScripterFor(spec *keyspec.Spec, srcs map[string]*compiler.Source, prefix string) *Scripter {
	sc := s.Scripter()
	sc.specs = map[string]*specRules{}
	for _, src := range srcs {
		sc.specs[src.SHA1] = newSpecRules(spec, src, prefix)
	}
	return sc
}

// specRules are the run-time checks of one script of a spec.
type specRules struct {
	src      *compiler.Source
	prefix   string
	keys     []*keyspec.Key
	channels []*keyspec.Channel
}

func newSpecRules(spec *keyspec.Spec, src *compiler.Source, prefix string) *specRules {
	r := &specRules{src: src, prefix: prefix, keys: src.Script.Reach()}
	seen := map[*keyspec.Channel]bool{}
	add := func(c *keyspec.Channel) {
		if c != nil && !seen[c] {
			seen[c] = true
			r.channels = append(r.channels, c)
		}
	}
	for _, d := range src.Script.Derived {
		add(d.Channel)
	}
	for _, res := range src.Resolved {
		for _, c := range res.Channels {
			add(c)
		}
	}
	// A channel the script names in a literal, or takes whole from KEYS or
	// ARGV: one of its instance's declared channels.
	if spec != nil {
		for _, c := range src.Info.Calls {
			if (c.Command != "publish" && c.Command != "spublish") || len(c.Args) < 2 {
				continue
			}
			for _, alt := range c.Args[1].Alts {
				if len(alt.Parts) != 1 {
					continue
				}
				lit, literal := alt.Literal()
				for _, ch := range spec.ChannelsOf(src.Script.Instance) {
					if !literal || ch.Pattern.Match(lit) {
						add(ch)
					}
				}
			}
		}
	}
	return r
}

// declared is the declared key name is one of, among those the script may reach.
func (r *specRules) declared(name string) (*keyspec.Key, bool) {
	rel, ok := strings.CutPrefix(name, r.prefix)
	if !ok {
		return nil, false
	}
	for _, k := range r.keys {
		if k.Pattern.Match(rel) {
			return k, true
		}
	}
	return nil, false
}

func (r *specRules) reachable() string {
	var names []string
	for _, k := range r.keys {
		names = append(names, k.Name+" ("+k.Pattern.Raw+")")
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// where is "script s (lua/a/s.lua:12)" for messages.
func (r *specRules) where(line int) string {
	if line > 0 {
		return fmt.Sprintf("script %s (%s:%d)", r.src.Script.Name, r.src.Info.File, line)
	}
	return fmt.Sprintf("script %s (%s)", r.src.Script.Name, r.src.Info.File)
}

// touchSpec checks one key a command of the script named.
func (r *runState) touchSpec(key string) {
	if _, ok := r.spec.declared(key); !ok {
		r.violation(fmt.Sprintf("%s touched key %q, which matches no pattern the script may reach (%s)", r.spec.where(r.line), key, r.spec.reachable()))
	}
}

// publishSpec checks one channel the script published to.
func (r *runState) publishSpec(channel string) {
	rel, ok := strings.CutPrefix(channel, r.spec.prefix)
	if ok {
		for _, c := range r.spec.channels {
			if c.Pattern.Match(rel) {
				return
			}
		}
	}
	var names []string
	for _, c := range r.spec.channels {
		names = append(names, c.Name+" ("+c.Pattern.Raw+")")
	}
	r.violation(fmt.Sprintf("%s published to channel %q, which matches no channel the script may reach (%s)", r.spec.where(r.line), channel, strings.Join(names, ", ")))
}

// ttlLine is the Lua line that gave key its TTL in this run (the PEXPIRE, the
// SET ... PX), or written, the line that wrote it, when no command of the
// run did (the key kept an older TTL).
func (r *runState) ttlLine(key string, written int) int {
	if l, ok := r.ttlAt[key]; ok {
		return l
	}
	return written
}

// finishSpec checks what the script left: the TTLs and bounds its spec declares.
func (r *runState) finishSpec() {
	for _, name := range r.res.Written {
		o := r.s.db.lookup(name, r.now)
		if o == nil {
			continue
		}
		k, ok := r.spec.declared(name)
		if !ok {
			continue // reported as touched
		}
		line := r.wroteAt[name]
		want := k.Expectation()
		switch {
		case want.Expires && !o.hasExpire && !want.MayPersist:
			r.violation(fmt.Sprintf("%s left key %q (key %s, ttl %s) without a TTL: it wrote it and set none", r.spec.where(line), name, k.Name, k.TTL.Rule))
		case !want.Expires && o.hasExpire:
			r.violation(fmt.Sprintf("%s left key %q (key %s, ttl none) with a TTL: the spec keeps it until it is deleted", r.spec.where(r.ttlLine(name, line)), name, k.Name))
		case want.Expires && want.MaxTTL > 0 && time.Duration(o.expireAt-r.now)*time.Millisecond > want.MaxTTL:
			r.violation(fmt.Sprintf("%s left key %q (key %s, ttl %s) with a TTL of %v, above the %v its spec allows", r.spec.where(r.ttlLine(name, line)), name, k.Name, k.TTL.Rule, time.Duration(o.expireAt-r.now)*time.Millisecond, want.MaxTTL))
		}
		if want.MaxLen > 0 {
			n := int64(-1)
			switch {
			case o.list != nil:
				n = int64(len(o.list.items))
			case o.stream != nil:
				n = o.stream.length
			}
			if n > int64(want.MaxLen) {
				r.violation(fmt.Sprintf("%s left key %q (key %s, max_len %d) with %d elements", r.spec.where(line), name, k.Name, k.MaxLen, n))
			}
		}
	}
}
