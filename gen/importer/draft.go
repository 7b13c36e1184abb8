package importer

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hanchat/luagen/gen/codegen"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/gen/rediscmd"
)

// Todo marks what only a person can decide in a drafted spec. A spec holding
// it is refused by the parser, which lists each one still open.
const Todo = keyspec.TodoMarker

// Draft is what import writes: the scripts (under lua/<instance>/) and the spec.
type Draft struct {
	Instance string
	Scripts  []Script // names made unique and valid, sources unchanged
	Spec     []byte
	// Todos are the lines of the spec with a decision left open.
	Todos int
	// Notes are what the reading found that the spec cannot take as it is
	// (a refusal luagen generate will report), one a script.
	Notes []string
	// Anchors are, per script, the ARGV positions it builds names from whose
	// pattern the sources do not say (each a prefix key marked TODO).
	Anchors map[string][]int
}

type draftKey struct {
	name     string
	pattern  string // "" when not known
	params   []string
	values   map[string]bool
	fields   []string
	expires  bool
	commands map[string]bool
	usedBy   []string
	built    string // for a derived key: how the script builds it
	channel  bool
	prefix   bool // a prefix key (its pattern ends with ':')
}

type draftArg struct {
	name, doc, typ string
	duration       bool // sent as a TTL in milliseconds (PX, PEXPIRE)
	seconds        bool // sent as a TTL in seconds (EX, EXPIRE, SETEX)
	numeric        bool
	part           bool      // a part of a built key
	key            *draftKey // an anchor the script builds keys from: a prefix key passed in ARGV
	channel        bool      // the channel of a PUBLISH (the whole argument)
	other          bool      // read elsewhere than as a PUBLISH channel
	unused         bool      // never read: callers pass it, the script ignores it
}

type draftDerived struct {
	key  *draftKey
	from string // KEYS position name, or ""
}

type draftScript struct {
	s        Script
	info     *luascript.Info
	keys     []*draftKey
	keyNames []string
	argv     []*draftArg
	derived  []draftDerived
	readOnly bool
	// Per KEYS position: never read; passed whole to PUBLISH; read otherwise.
	unusedKey, chanKey, keyUse []bool
	// repeatKeys, repeatArgs: the script reads KEYS[i] (ARGV[i]) with an index
	// that is not a literal (ipairs(KEYS), for i = 2, #ARGV): its last
	// position is drafted repeating.
	repeatKeys, repeatArgs bool
}

var (
	commentRe  = regexp.MustCompile(`(KEYS|ARGV)\[(\d+)\]\s*(?:->|=>|-|:|=)?\s*(.*)`)
	patternRe  = regexp.MustCompile(`^[A-Za-z0-9._{}<>:-]*[:<{][A-Za-z0-9._{}<>:-]*$`)
	placeRe    = regexp.MustCompile(`\{?<([A-Za-z_][A-Za-z0-9_-]*)>\}?`)
	wordRe     = regexp.MustCompile(`[a-z][a-z0-9]*`)
	codeRe     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	fillerWord = map[string]bool{"the": true, "a": true, "an": true, "of": true, "key": true, "name": true, "for": true, "to": true, "is": true, "in": true, "on": true, "which": true, "we": true, "are": true, "this": true, "that": true, "with": true, "and": true, "or": true, "from": true, "e": true, "g": true, "example": true, "queue's": true}
)

// comments are the KEYS and ARGV descriptions of a script's comments (Lua
// comments of its source, and the Go comment above its declaration).
func comments(s Script) (keys, argv map[int]string) {
	keys, argv = map[int]string{}, map[int]string{}
	text := s.Doc + "\n" + string(s.Src)
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "--") && !strings.HasPrefix(t, "*") && !strings.HasPrefix(t, "//") && s.Doc == "" {
			// In Lua, only comment lines describe positions.
			if !strings.HasPrefix(t, "KEYS") && !strings.HasPrefix(t, "ARGV") {
				continue
			}
		}
		m := commentRe.FindStringSubmatch(t)
		if m == nil || strings.Contains(t, "redis.call") || strings.Contains(t, "local ") {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		desc := strings.TrimSpace(strings.TrimRight(m[3], ",;."))
		if m[1] == "KEYS" && keys[n] == "" {
			keys[n] = desc
		} else if m[1] == "ARGV" && argv[n] == "" {
			argv[n] = desc
		}
	}
	return keys, argv
}

// nameFrom is a snake_case name from a description: its first meaningful words.
func nameFrom(desc, fallback string) string {
	if p := asPattern(desc); p != "" {
		var lits []string
		for i, seg := range strings.Split(p, ":") {
			if i > 0 && !strings.Contains(seg, "{") && seg != "" {
				lits = append(lits, strings.ToLower(seg))
			}
		}
		if n := identify(strings.Join(lits, "_")); n != "" {
			return n
		}
		return fallback
	}
	var words []string
	for _, w := range wordRe.FindAllString(strings.ToLower(desc), -1) {
		if fillerWord[w] {
			continue
		}
		words = append(words, w)
		if len(words) == 2 {
			break
		}
	}
	if n := identify(strings.Join(words, "_")); n != "" {
		return n
	}
	return fallback
}

func identify(s string) string {
	s = strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s), "_")
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z') {
		return ""
	}
	return s
}

// asPattern reads a description that is a key name written with <placeholders>
// ("asynq:{<qname>}:t:<task_id>") as a luagen pattern ("asynq:{{qname}}:t:{task_id}").
// Redis hashes the first tag only: a later {<x>} is a plain placeholder. A
// name ending in ':' is a prefix key's.
func asPattern(desc string) string {
	f := strings.Fields(desc)
	if len(f) == 0 {
		return ""
	}
	d := strings.Trim(f[0], "`'\",")
	if !patternRe.MatchString(d) || !strings.Contains(d, ":") || !strings.Contains(d, "<") {
		return ""
	}
	tags := 0
	out := placeRe.ReplaceAllStringFunc(d, func(m string) string {
		name := identify(strings.ToLower(placeRe.FindStringSubmatch(m)[1]))
		if strings.HasPrefix(m, "{") && strings.HasSuffix(m, "}") {
			if tags++; tags == 1 {
				return "{{" + name + "}}"
			}
		}
		return "{" + name + "}"
	})
	if strings.ContainsAny(strings.NewReplacer("{{", "", "}}", "", "{", "", "}", "").Replace(out), "<>{}") {
		return ""
	}
	segs := strings.Split(out, ":")
	for i, seg := range segs {
		if seg == "" && (i != len(segs)-1 || i == 0) {
			return "" // only a prefix key's pattern ends with ':'
		}
	}
	return out
}

// valueOf guesses the value type a command works on from its group.
func valueOf(cmd string) string {
	c := rediscmd.Lookup(cmd)
	if c == nil {
		return ""
	}
	switch c.Group {
	case "hash":
		return keyspec.ValueHash
	case "list":
		return keyspec.ValueList
	case "set":
		return keyspec.ValueSet
	case "sorted-set":
		return keyspec.ValueZSet
	case "stream":
		return keyspec.ValueStream
	case "string":
		switch cmd {
		case "incr", "incrby", "decr", "decrby", "incrbyfloat":
			return keyspec.ValueCounter
		}
		return keyspec.ValueString
	}
	return ""
}

var expiring = map[string]bool{"expire": true, "pexpire": true, "expireat": true, "pexpireat": true, "setex": true, "psetex": true, "getex": true}

// New drafts the spec of the scripts for one instance.
func New(instance string, scripts []Script) (*Draft, error) {
	if identify(instance) != instance {
		return nil, fmt.Errorf("instance %q: a name is [a-z][a-z0-9_]*", instance)
	}
	if len(scripts) == 0 {
		return nil, errors.New("no script found")
	}
	d := &Draft{Instance: instance}
	keys := map[string]*draftKey{}
	var keyOrder []string
	var out []*draftScript
	used := map[string]bool{}
	for _, s := range scripts {
		name := s.Name
		for i := 2; used[name] || identify(name) != name; i++ {
			if identify(name) != name {
				name = "script"
			}
			name = fmt.Sprintf("%s_%d", strings.TrimRight(s.Name, "_0123456789"), i)
		}
		used[name] = true
		s.Name = name
		d.Scripts = append(d.Scripts, s)
		info, err := luascript.Analyze(s.File, s.Src)
		if err != nil {
			d.Notes = append(d.Notes, fmt.Sprintf("%s (%s): %v", s.Name, s.File, err))
			continue
		}
		ds := &draftScript{s: s, info: info}
		kdocs, adocs := comments(s)
		nkeys := max(info.MaxKey(), s.NumKeys)
		for n := range kdocs {
			nkeys = max(nkeys, n)
		}
		if nkeys <= 0 && len(info.Keys) > 0 {
			nkeys = 1 // KEYS read only as KEYS[i]: one position, drafted repeating
		}
		narg := info.MaxArg()
		for _, c := range info.Calls {
			for _, a := range c.Args {
				for _, alt := range a.Alts {
					for _, p := range alt.Parts {
						if p.Kind == luascript.PartArgv && p.N == 0 && int(p.Min) > narg {
							narg = int(p.Min) // ARGV[i] from a loop starting there: the repeating position
						}
					}
				}
			}
		}
		for n := range adocs {
			if n <= narg+2 {
				narg = max(narg, n)
			}
		}
		// KEYS positions: a key each, shared by scripts that describe it alike.
		for i := 1; i <= nkeys; i++ {
			pname := nameFrom(kdocs[i], fmt.Sprintf("key%d", i))
			if codegen.WrapperLocal(pname) {
				pname += "_key" // generate refuses a position named as a wrapper's local
			}
			for j := 0; j < i-1; j++ {
				if ds.keyNames[j] == pname {
					pname = fmt.Sprintf("%s_%d", pname, i)
				}
			}
			pattern := asPattern(kdocs[i])
			kname := pname
			if pattern != "" {
				// One pattern is one key, whatever the scripts call it.
				for _, n := range keyOrder {
					if shape(keys[n].pattern) == shape(pattern) && !keys[n].channel {
						kname, pattern = n, keys[n].pattern
					}
				}
			}
			if k, ok := keys[kname]; ok && (k.pattern != pattern || pattern == "" && !sameWords(kdocs[i])) {
				kname = s.Name + "_" + pname
			}
			k := keys[kname]
			if k == nil {
				k = &draftKey{name: kname, pattern: pattern, values: map[string]bool{}, commands: map[string]bool{}}
				keys[kname] = k
				keyOrder = append(keyOrder, kname)
			}
			k.usedBy = append(k.usedBy, fmt.Sprintf("%s KEYS[%d]", s.Name, i))
			ds.keys = append(ds.keys, k)
			ds.keyNames = append(ds.keyNames, pname)
		}
		for i := 1; i <= narg; i++ {
			ds.argv = append(ds.argv, &draftArg{name: nameFrom(adocs[i], fmt.Sprintf("arg%d", i)), doc: adocs[i], typ: keyspec.ArgString})
		}
		for i, a := range ds.argv {
			for j := 0; j < i; j++ {
				if ds.argv[j].name == a.name {
					a.name = fmt.Sprintf("%s_%d", a.name, i+1)
				}
			}
		}
		for _, n := range info.Numeric {
			if n.Index >= 1 && n.Index <= len(ds.argv) {
				ds.argv[n.Index-1].numeric = true
			}
		}
		ds.unusedKey, ds.chanKey, ds.keyUse = make([]bool, len(ds.keys)), make([]bool, len(ds.keys)), make([]bool, len(ds.keys))
		ds.read(keys, &keyOrder)
		ds.positions(keys, &keyOrder)
		out = append(out, ds)
	}
	d.Anchors = map[string][]int{}
	for _, ds := range out {
		for i, a := range ds.argv {
			if a.key != nil && !a.key.channel && a.key.pattern == "" {
				d.Anchors[ds.s.Name] = append(d.Anchors[ds.s.Name], i+1)
			}
		}
	}
	d.Spec = d.render(out, keys, keyOrder)
	for _, line := range strings.Split(string(d.Spec), "\n") {
		if strings.Contains(line, Todo) && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			d.Todos++
		}
	}
	return d, nil
}

func sameWords(desc string) bool { return desc != "" }

// read learns from the script's calls: value types and fields of its keys, which
// keys get an expiry, which ARGV are durations or parts of names, and the keys
// and channels it builds.
func (ds *draftScript) read(keys map[string]*draftKey, order *[]string) {
	writes := false
	for _, c := range ds.info.Calls {
		if c.Command == "" {
			continue
		}
		cmd := rediscmd.Lookup(c.Command)
		if cmd != nil && (cmd.Has(rediscmd.FlagWrite) || cmd.MayReplicate) {
			writes = true
		}
		keyAt := keyPositions(cmd, c.Args)
		for i, a := range c.Args {
			if i == 0 {
				continue
			}
			for _, alt := range a.Alts {
				n, whole := alt.Key()
				channel := (c.Command == "publish" || c.Command == "spublish") && i == 1
				if whole && n > 0 && n <= len(ds.keys) {
					if channel {
						ds.chanKey[n-1] = true
					} else {
						ds.keyUse[n-1] = true
					}
				}
				if len(alt.Parts) == 1 && alt.Parts[0].Kind == luascript.PartArgv {
					m := alt.Parts[0].N
					if m == 0 && alt.Parts[0].Min > 1 {
						m = int(alt.Parts[0].Min) // ARGV[i] of a loop from m: its first position
					}
					if m > 0 && m <= len(ds.argv) {
						if channel {
							ds.argv[m-1].channel = true
						} else {
							ds.argv[m-1].other = true
						}
					}
				}
				if whole && n > 0 && n <= len(ds.keys) && i == 1 && !channel {
					k := ds.keys[n-1]
					k.commands[c.Command] = true
					if v := valueOf(c.Command); v != "" {
						k.values[v] = true
					}
					if expiring[c.Command] || c.Command == "set" && (slices.Contains(c.Literals, "px") || slices.Contains(c.Literals, "ex")) {
						k.expires = true
					}
					if k.values[keyspec.ValueHash] && (c.Command == "hset" || c.Command == "hget" || c.Command == "hincrby" || c.Command == "hsetnx") && len(c.Args) > 2 {
						if f, ok := c.Args[2].Alts, true; ok && len(f) == 1 {
							if lit, ok := f[0].Literal(); ok && !slices.Contains(k.fields, lit) && keyspec.FieldOK(lit) {
								k.fields = append(k.fields, lit)
							}
						}
					}
				}
				if !whole && (len(alt.Parts) > 1 || alt.Parts[0].Kind == luascript.PartValue && !channel) && (keyAt[i] || channel) {
					if k := ds.derive(alt, channel, keys, order); k != nil && !channel && i == 1 {
						k.commands[c.Command] = true
						if v := valueOf(c.Command); v != "" {
							k.values[v] = true
						}
						if expiring[c.Command] || c.Command == "set" && (slices.Contains(c.Literals, "px") || slices.Contains(c.Literals, "ex")) {
							k.expires = true
						}
					}
				}
				// ARGV sent as a TTL.
				if len(alt.Parts) == 1 && alt.Parts[0].Kind == luascript.PartArgv {
					if n := alt.Parts[0].N; n > 0 && n <= len(ds.argv) && i > 1 {
						prev := strings.ToLower(c.Args[i-1].Text)
						switch {
						case (c.Command == "pexpire" || c.Command == "psetex") && i == 2 || prev == "px":
							ds.argv[n-1].duration = true
						case (c.Command == "expire" || c.Command == "setex") && i == 2 || prev == "ex":
							// Seconds: a duration_ms would be sent in milliseconds.
							ds.argv[n-1].seconds = true
						}
					}
				}
			}
		}
	}
	ds.readOnly = !writes && ds.info.HasFlag("no-writes")
}

// positions drafts what the script's reading says of its positions: a KEYS
// position it only publishes to passes a channel (channel: <name>), an ARGV it
// only publishes to carries one, and a position it never reads is unused.
func (ds *draftScript) positions(keys map[string]*draftKey, order *[]string) {
	dynKeys, readKeys := false, map[int]bool{}
	for _, r := range ds.info.Keys {
		dynKeys = dynKeys || r.Index == 0
		readKeys[r.Index] = true
	}
	dynArgs, readArgs := false, map[int]bool{}
	for _, r := range ds.info.Argv {
		dynArgs = dynArgs || r.Index == 0
		readArgs[r.Index] = true
	}
	ds.repeatKeys, ds.repeatArgs = dynKeys, dynArgs
	for i := range ds.keys {
		ds.unusedKey[i] = !dynKeys && !readKeys[i+1]
		if !ds.chanKey[i] || ds.keyUse[i] {
			ds.chanKey[i] = false
			continue
		}
		old := ds.keys[i]
		use := fmt.Sprintf("%s KEYS[%d]", ds.s.Name, i+1)
		old.usedBy = slicesDelete(old.usedBy, use)
		if len(old.usedBy) == 0 {
			delete(keys, old.name)
			*order = slicesDelete(*order, old.name)
		}
		name := ds.keyNames[i]
		if k, ok := keys[name]; ok && !k.channel {
			name += "_channel"
		}
		k := keys[name]
		if k == nil {
			k = &draftKey{name: name, channel: true, pattern: old.pattern, values: map[string]bool{}, commands: map[string]bool{}}
			keys[name] = k
			*order = append(*order, name)
		}
		k.usedBy = append(k.usedBy, use+" (a channel passed in KEYS: its pattern lies under a key prefix too)")
		ds.keys[i] = k
	}
	for i, a := range ds.argv {
		a.unused = !dynArgs && !readArgs[i+1]
		if a.channel && !a.other && a.key == nil {
			name := a.name
			if k, ok := keys[name]; ok && !k.channel {
				name += "_channel"
			}
			k := keys[name]
			if k == nil {
				k = &draftKey{name: name, channel: true, values: map[string]bool{}, commands: map[string]bool{}}
				keys[name] = k
				*order = append(*order, name)
			}
			k.usedBy = append(k.usedBy, fmt.Sprintf("%s ARGV[%d]", ds.s.Name, i+1))
			a.key = k
		}
	}
}

func slicesDelete(xs []string, x string) []string {
	out := xs[:0]
	for _, y := range xs {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

// derive notes a key or channel the script builds.
func (ds *draftScript) derive(alt luascript.Str, channel bool, keys map[string]*draftKey, order *[]string) *draftKey {
	first := alt.Parts[0]
	from := ""
	var anchor *draftKey
	rest := alt.Parts
	switch first.Kind {
	case luascript.PartKey:
		if first.N < 1 || first.N > len(ds.keys) {
			return nil
		}
		anchor = ds.keys[first.N-1]
		from = ds.keyNames[first.N-1]
		rest = alt.Parts[1:]
	case luascript.PartArgv:
		if first.N < 1 || first.N > len(ds.argv) {
			return nil
		}
		a := ds.argv[first.N-1]
		if a.key == nil {
			// The name passed in ARGV: a prefix ("q:{{queue}}:") or a whole key.
			pattern := asPattern(a.doc)
			prefix := pattern == "" || strings.HasSuffix(pattern, ":")
			name := identify(a.name)
			if prefix && !strings.Contains(name, "prefix") {
				name += "_prefix"
			}
			if pattern != "" {
				for _, n := range *order {
					if shape(keys[n].pattern) == shape(pattern) {
						name, pattern = n, keys[n].pattern
					}
				}
			}
			for i := 2; keys[name] != nil && keys[name].pattern != pattern; i++ {
				name = fmt.Sprintf("%s_%d", identify(a.name), i)
			}
			a.key = keys[name]
			if a.key == nil {
				a.key = &draftKey{name: name, pattern: pattern, values: map[string]bool{}, commands: map[string]bool{}, prefix: prefix}
				keys[name] = a.key
				*order = append(*order, name)
			}
			a.key.usedBy = append(a.key.usedBy, fmt.Sprintf("%s ARGV[%d]", ds.s.Name, first.N))
		}
		anchor = a.key
		from = a.name
		rest = alt.Parts[1:]
	case luascript.PartText:
	case luascript.PartValue:
		if channel || first.Folded {
			return nil // luagen generate will refuse it and say why
		}
		// A name read from data (a parent's key kept in a job's hash), or
		// built on one: a key from data, whose pattern only a person knows.
		from = keyspec.DerivedFromData
		rest = alt.Parts[1:]
	default:
		return nil // not anchored: luagen generate will refuse it and say why
	}
	var words, pattern []string
	known := (anchor == nil || anchor.pattern != "") && from != keyspec.DerivedFromData
	if anchor != nil {
		pattern = append(pattern, anchor.pattern)
	}
	var params []string
	ph := 0
	for _, p := range rest {
		switch p.Kind {
		case luascript.PartText:
			pattern = append(pattern, p.Text)
			words = append(words, wordRe.FindAllString(strings.ToLower(p.Text), -1)...)
		case luascript.PartArgv:
			pname := "id"
			if p.N > 0 && p.N <= len(ds.argv) {
				ds.argv[p.N-1].part = true
				pname = ds.argv[p.N-1].name
			}
			if ph++; ph > 1 {
				pname = fmt.Sprintf("%s%d", pname, ph)
			}
			params = append(params, pname)
			pattern = append(pattern, "{"+pname+"}")
		default:
			pname := "id"
			if ph++; ph > 1 {
				pname = fmt.Sprintf("id%d", ph)
			}
			params = append(params, pname)
			pattern = append(pattern, "{"+pname+"}")
		}
	}
	base := "built"
	if anchor != nil {
		base = anchor.name
	}
	if from == keyspec.DerivedFromData {
		base = "data_key"
	}
	if len(words) > 0 {
		base += "_" + strings.Join(words, "_")
	}
	if anchor == nil && len(words) > 0 {
		base = strings.Join(words, "_")
	}
	name := identify(strings.Replace(base, "_prefix", "", 1))
	if name == "" {
		name = "built"
	}
	if anchor != nil && name == anchor.name {
		name += "_item"
	}
	pat := strings.Join(pattern, "")
	if !known || !validPattern(pat) {
		pat = ""
	}
	if pat != "" {
		for _, n := range *order {
			if other := keys[n]; shape(other.pattern) == shape(pat) && other.channel == channel {
				name, pat = n, other.pattern
			}
		}
	}
	k := keys[name]
	if k != nil && (k.channel != channel || k.pattern != pat) {
		for i := 2; keys[name] != nil && (keys[name].channel != channel || keys[name].pattern != pat); i++ {
			name = fmt.Sprintf("%s_%d", identify(base), i)
		}
		k = keys[name]
	}
	if k == nil {
		k = &draftKey{name: name, pattern: pat, params: params, values: map[string]bool{}, commands: map[string]bool{}, built: alt.String(), channel: channel}
		keys[name] = k
		*order = append(*order, name)
	}
	for _, d := range ds.derived {
		if d.key == k && d.from == from {
			return k
		}
	}
	k.usedBy = append(k.usedBy, fmt.Sprintf("%s builds %s", ds.s.Name, alt.String()))
	ds.derived = append(ds.derived, draftDerived{key: k, from: from})
	return k
}

// validPattern reports whether a synthesized pattern is one luagen parses.
func validPattern(p string) bool {
	if p == "" {
		return false
	}
	segs := strings.Split(p, ":")
	for i, seg := range segs {
		inner := seg
		switch {
		case strings.HasPrefix(seg, "{{") && strings.HasSuffix(seg, "}}"):
			inner = seg[2 : len(seg)-2]
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}"):
			inner = seg[1 : len(seg)-1]
		case seg == "" && i == len(segs)-1 && i > 0:
			continue // a prefix key's final ':'
		default:
			if seg == "" || !keyspec.FieldOK(seg) {
				return false
			}
			continue
		}
		if identify(inner) != inner {
			return false
		}
	}
	return true
}

// shape is a pattern with its placeholders' names left out: two patterns of
// one shape name the same keys.
func shape(p string) string {
	return paramRe.ReplaceAllStringFunc(p, func(m string) string { return strings.Repeat("{", strings.Count(m, "{")) + "}" })
}

// render writes the spec.
func (d *Draft) render(scripts []*draftScript, keys map[string]*draftKey, order []string) []byte {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	todo := func(what string) string { return Todo + ": " + what }
	q := strconv.Quote
	in := d.Instance
	w("# yaml-language-server: $schema=docs/keyspec.schema.json\n")
	w("# Drafted by luagen import from %d script(s). Every %s is a decision only a\n", len(d.Scripts), Todo)
	w("# person can make: luagen generate lists those still open, then what else it refuses.\n")
	w("version: 1\n")
	w("instances:\n  %s:\n", in)
	w("    topology: standalone   # cluster if the scripts run on Redis Cluster (then every key needs a hash tag)\n")
	w("    dbs:\n      db0: {index: 0, url_env: %s, user: %s}\n", strings.ToUpper(in)+"_REDIS_URL", in)
	prefix := commonPrefix(keys)
	w("users:\n  %s:\n    instance: %s\n", in, in)
	w("    select: {allow: false, reason: \"the URL names database 0\"}\n")
	if prefix != "" {
		w("    key_prefixes:\n      - {prefix: %s, reason: %s}\n", q(prefix), q(todo("what this prefix holds (every key of the drafted patterns starts with it)")))
	} else {
		w("    key_prefixes:\n      - {prefix: %s, reason: %s}\n", q(todo("the prefix every key starts with, ending in ':'")), q(todo("what it holds")))
	}
	channels := false
	for _, n := range order {
		if keys[n].channel {
			channels = true
		}
	}
	if channels {
		w("    channel_prefixes:\n      - {prefix: %s, reason: %s}\n", q(todo("the prefix of the channels the scripts publish, ending in ':'")), q(todo("what they carry")))
	}
	w("keys:\n")
	for _, n := range order {
		k := keys[n]
		if k.channel {
			continue
		}
		w("  %s:\n", n)
		w("    # %s\n", strings.Join(k.usedBy, "; "))
		if len(k.commands) > 0 {
			w("    # commands: %s\n", strings.ToUpper(strings.Join(slices.Sorted(maps.Keys(k.commands)), ", ")))
		}
		w("    db: %s.db0\n", in)
		d.writePattern(&b, k)
		if k.prefix || strings.HasSuffix(k.pattern, ":") {
			w("    value: [prefix]   # a namespace the scripts build keys from; it holds no value\n")
			continue
		}
		vals := slices.Sorted(maps.Keys(k.values))
		switch {
		case len(vals) == 0:
			w("    value: [%s]\n", todo("the value type (string, counter, hash, list, set, zset, stream, msgpack, json)"))
		default:
			w("    value: [%s]\n", strings.Join(vals, ", "))
		}
		if len(k.fields) > 0 {
			w("    fields: [%s]\n", strings.Join(quoteAll(k.fields), ", "))
		}
		if k.values[keyspec.ValueStream] || k.values[keyspec.ValueList] {
			w("    # a bound luagen can check (optional): max_len (LTRIM, XADD MAXLEN)\n")
		}
		if k.expires {
			w("    ttl: {rule: fixed, value: %s}\n", q(todo("the TTL the script sets (fixed, heartbeat, clamped or window_jitter)")))
		} else {
			w("    ttl: {rule: none, reason: %s}\n", q(todo("why it never expires (no script sets a TTL on it)")))
		}
	}
	if channels {
		w("channels:\n")
		for _, n := range order {
			k := keys[n]
			if !k.channel {
				continue
			}
			w("  %s:\n    # %s\n    instance: %s\n", n, strings.Join(k.usedBy, "; "), in)
			d.writePattern(&b, k)
			w("    max_bytes: %s\n", q(todo("the largest message")))
		}
	}
	w("scripts:\n")
	for _, ds := range scripts {
		s := ds.s
		w("  %s:\n", s.Name)
		w("    source: %s\n", q("imported from "+s.File))
		w("    instance: %s\n", in)
		if ds.readOnly {
			w("    read_only: true\n")
		}
		if len(ds.keys) > 0 {
			w("    keys:\n")
		}
		nkeys := 0
		for i, k := range ds.keys {
			rep := ""
			if ds.repeatKeys && i == len(ds.keys)-1 {
				rep = ", repeat: {min: 1, max: " + q(todo("the most keys a call passes here (the script reads KEYS[i]); or, if another position repeats, move repeat there")) + "}"
			}
			switch {
			case k.channel:
				w("      - {name: %s, channel: %s}\n", ds.keyNames[i], k.name)
			case ds.unusedKey[i]:
				w("      - {name: %s, one_of: [%s], unused: {reason: %s}}\n", ds.keyNames[i], k.name, q(todo("why callers pass it (the script never reads it)")))
			default:
				nkeys++
				w("      - {name: %s, one_of: [%s]%s}\n", ds.keyNames[i], k.name, rep)
			}
		}
		if nkeys > 1 {
			w("    cross_slot: %s\n", q(todo("why its KEYS may be in different slots on a standalone server, or tie them with a hash tag and shared_placeholders")))
		}
		if len(ds.argv) > 0 {
			w("    argv:\n")
			for i, a := range ds.argv {
				doc := ""
				if a.doc != "" {
					doc = ", doc: " + q(a.doc)
				}
				if ds.repeatArgs && i == len(ds.argv)-1 && !a.unused && (a.key == nil || a.key.channel) && !a.duration && !a.seconds {
					doc += ", repeat: {min: 1, max: " + q(todo("the most values a call passes here (the script reads ARGV[i])")) + "}"
				}
				switch {
				case a.unused:
					w("      - {name: %s, unused: {reason: %s}%s}\n", a.name, q(todo("why callers pass it (the script never reads it)")), doc)
				case a.key != nil && a.key.channel:
					w("      - {name: %s, channel: %s%s}   # the channel it publishes to\n", a.name, a.key.name, doc)
				case a.key != nil:
					w("      - {name: %s, type: key, key: %s%s}   # a name the script builds keys from\n", a.name, a.key.name, doc)
				case a.seconds && !a.duration:
					w("      - {name: %s, type: int, min: 1, max: %s%s}   # a TTL in seconds (EX, EXPIRE)\n", a.name, q(todo("the longest TTL it may send, in seconds")), doc)
				case a.duration:
					w("      - {name: %s, type: duration_ms, max: %s%s}\n", a.name, q(todo("the longest TTL it may send")), doc)
				case a.part:
					w("      - {name: %s, type: name, max_len: %s%s}   # a part of a name the script builds\n", a.name, q(todo("its longest value")), doc)
				case a.numeric:
					w("      - {name: %s, type: int%s}   # the script computes with it\n", a.name, doc)
				default:
					w("      - {name: %s, type: string, max_bytes: %s%s}\n", a.name, q(todo("its largest value")), doc)
				}
			}
		}
		w("    reply: %s\n", replyOf(ds.info.Returns))
		if len(ds.info.Errors) > 0 {
			w("    errors:\n")
			seen := map[string]bool{}
			for _, e := range ds.info.Errors {
				if e.Code != "" && !seen[e.Code] {
					seen[e.Code] = true
					if !codeRe.MatchString(e.Code) {
						w("      # redis.error_reply(%q ...): a declared code is the reply's first word, [A-Za-z][A-Za-z0-9_]*\n", e.Code)
						continue
					}
					w("      - {code: %s}\n", e.Code)
				}
			}
		}
		if len(ds.derived) > 0 {
			w("    derived:\n")
			for _, dv := range ds.derived {
				kind := "key"
				if dv.key.channel {
					kind = "channel"
				}
				if dv.from == keyspec.DerivedFromData {
					w("      - {%s: %s, from: %s}   # a name read from data: the ACL grants its pattern, the harness checks each name; refused on a cluster\n", kind, dv.key.name, dv.from)
				} else if dv.from != "" {
					w("      - {%s: %s, from: %s}\n", kind, dv.key.name, dv.from)
				} else {
					w("      - {%s: %s}\n", kind, dv.key.name)
				}
			}
		}
	}
	return []byte(b.String())
}

func (d *Draft) writePattern(b *strings.Builder, k *draftKey) {
	q := strconv.Quote
	if k.pattern == "" {
		if k.built != "" {
			fmt.Fprintf(b, "    # built as %s\n", k.built)
		}
		if k.prefix {
			fmt.Fprintf(b, "    pattern: %s\n", q(Todo+": the prefix's pattern, ending in ':', app:{{id}}: style"))
			return
		}
		if k.channel {
			fmt.Fprintf(b, "    pattern: %s\n", q(Todo+": the channel's pattern, under a channel prefix, app:events:{id} style"))
			return
		}
		fmt.Fprintf(b, "    pattern: %s\n", q(Todo+": the name's pattern, app:{id} style"))
		return
	}
	fmt.Fprintf(b, "    pattern: %s\n", q(k.pattern))
	params := paramsOf(k.pattern)
	if len(params) > 0 {
		fmt.Fprintf(b, "    params:\n")
		for _, p := range params {
			fmt.Fprintf(b, "      %s: {type: %s}\n", p, q(Todo+": uuid, int, hex, name (with max_len), enum, sha256 or hmac"))
		}
	}
}

var paramRe = regexp.MustCompile(`\{+([a-z][a-z0-9_]*)\}+`)

func paramsOf(pattern string) []string {
	var out []string
	for _, m := range paramRe.FindAllStringSubmatch(pattern, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// replyOf guesses the reply's declaration from what the script may return.
func replyOf(kinds []string) string {
	nullable := slices.Contains(kinds, "nil")
	var rest []string
	for _, k := range kinds {
		if k != "nil" && k != "error" {
			rest = append(rest, k)
		}
	}
	n := ""
	if nullable {
		n = ", nullable: true"
	}
	switch {
	case len(rest) == 1 && rest[0] == "number":
		return "{type: int, name: result" + n + "}"
	case len(rest) == 1 && rest[0] == "bool":
		return "{type: bool, name: ok}"
	case len(rest) == 1 && rest[0] == "string":
		return "{type: string, name: result" + n + "}"
	case len(rest) == 0 && nullable:
		return "{type: bool, name: ok}   # the script returns nothing: false"
	}
	return strconv.Quote(Todo + ": the reply's shape (it may return " + strings.Join(kinds, ", ") + ")")
}

func commonPrefix(keys map[string]*draftKey) string {
	var lits []string
	for _, k := range keys {
		if k.channel || k.pattern == "" {
			continue
		}
		lit := k.pattern
		if i := strings.IndexByte(lit, '{'); i >= 0 {
			lit = lit[:i]
		}
		lits = append(lits, lit)
	}
	if len(lits) == 0 {
		return ""
	}
	sort.Strings(lits)
	p := lits[0]
	for _, l := range lits[1:] {
		for !strings.HasPrefix(l, p) {
			p = p[:len(p)-1]
		}
	}
	if i := strings.LastIndexByte(p, ':'); i >= 0 {
		return p[:i+1]
	}
	return ""
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}

// keyPositions are the arguments of a call Redis's key specs say are keys, as
// far as the reading can tell (the first argument when it cannot).
func keyPositions(cmd *rediscmd.Command, args []luascript.Arg) map[int]bool {
	out := map[int]bool{1: true}
	if cmd == nil {
		return out
	}
	keys, err := cmd.StaticKeyPositions(compiler.StaticArgs(args))
	if err != nil {
		return out
	}
	out = map[int]bool{}
	for _, k := range keys {
		out[k.Pos] = true
	}
	return out
}
