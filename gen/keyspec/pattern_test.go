package keyspec

import (
	"strings"
	"testing"
)

// testParams are placeholders of every shape the pattern tests use.
func testParams() map[string]*Param {
	color := &Enum{Name: "color", Values: []string{"red", "green"}}
	return map[string]*Param{
		"id":     {Name: "id", Type: TypeUUID},
		"n":      {Name: "n", Type: TypeInt, Min: 0, Max: 1 << 40},
		"small":  {Name: "small", Type: TypeInt, Min: 100, Max: 200},
		"h":      {Name: "h", Type: TypeHex, Len: 2},
		"q":      {Name: "q", Type: TypeName, MaxLen: 64},
		"x":      {Name: "x", Type: TypeName, MaxLen: 32},
		"key":    {Name: "key", Type: TypePath, MaxLen: 64},
		"qname":  {Name: "qname", Type: TypePath, MaxLen: 64},
		"color":  {Name: "color", Type: TypeEnum, Enum: color, Encode: EncodeLabel},
		"digest": {Name: "digest", Type: TypeSHA256},
	}
}

// mustPattern parses raw with the test placeholders it names.
func mustPattern(t *testing.T, raw string) Pattern {
	t.Helper()
	p, err := parsePattern(raw, usedParams(raw))
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return p
}

// usedParams are the test placeholders whose {name} raw mentions.
func usedParams(raw string) map[string]*Param {
	out := map[string]*Param{}
	for name, p := range testParams() {
		if strings.Contains(raw, "{"+name+"}") {
			out[name] = p
		}
	}
	return out
}

// Every form a key name takes in the libraries luagen is tried on: the tag,
// the glob, the literal prefix, whether the segment view exists, and which
// names match.
func TestPatternForms(t *testing.T) {
	for _, tc := range []struct {
		raw, glob, prefix, tagSig string
		tagParam                  string // the tag's one placeholder, if any
		tagText                   string // the tag's fixed text, if any
		simple                    bool
		match, refuse             []string
	}{
		{raw: "shop:cart:{id}", glob: "shop:cart:*", prefix: "shop:cart:", simple: true,
			match: []string{"shop:cart:00000000-0000-0000-0000-000000000000"}, refuse: []string{"shop:cart:x", "shop:cart:"}},
		{raw: "session:{{id}}:data", glob: "session:{*}:data", prefix: "session:{", tagSig: "{id}", tagParam: "id", simple: true,
			match: []string{"session:{00000000-0000-0000-0000-000000000000}:data"}, refuse: []string{"session:00000000-0000-0000-0000-000000000000:data"}},
		{raw: "b_{id}_settings", glob: "b_*_settings", prefix: "b_",
			match: []string{"b_00000000-0000-0000-0000-000000000000_settings"}, refuse: []string{"b__settings", "b_x_settings"}},
		{raw: `\{bull\}:{q}:wait`, glob: "{bull}:*:wait", prefix: "{bull}:", tagSig: "bull", tagText: "bull",
			match: []string{"{bull}:emails:wait"}, refuse: []string{"bull:emails:wait", "{bull}:a:b:wait"}},
		{raw: `\{orders:lock:{n}\}:expiry`, glob: "{orders:lock:*}:expiry", prefix: "{orders:lock:", tagSig: "orders:lock:{n}",
			match: []string{"{orders:lock:42}:expiry"}, refuse: []string{"{orders:lock:042}:expiry", "{orders:lock:}:expiry"}},
		{raw: "{{q}}:jobs", glob: "{*}:jobs", prefix: "{", tagSig: "{q}", tagParam: "q", simple: true,
			match: []string{"{default}:jobs"}},
		{raw: "rate:{key}", glob: "rate:*", prefix: "rate:",
			match: []string{"rate:user:42:login", "rate:ip"}, refuse: []string{"rate:", "rate:user::42", "rate:user:", "rate:{x}"}},
		{raw: "asynq:{{qname}}:t:{id}", glob: "asynq:{*}:t:*", prefix: "asynq:{", tagSig: "{qname}", tagParam: "qname",
			match: []string{"asynq:{critical:eu}:t:00000000-0000-0000-0000-000000000000"}},
		{raw: "t:item:{id}:{color}", glob: "t:item:*:*", prefix: "t:item:", simple: true,
			match: []string{"t:item:00000000-0000-0000-0000-000000000000:red"}, refuse: []string{"t:item:00000000-0000-0000-0000-000000000000:blue"}},
		{raw: "fixed:name", glob: "fixed:name", prefix: "fixed:name", simple: true, match: []string{"fixed:name"}, refuse: []string{"fixed:names"}},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			p := mustPattern(t, tc.raw)
			if got := p.Glob(); got != tc.glob {
				t.Errorf("Glob = %q, want %q", got, tc.glob)
			}
			if got := p.LiteralPrefix(); got != tc.prefix {
				t.Errorf("LiteralPrefix = %q, want %q", got, tc.prefix)
			}
			if got := p.TagSignature(); got != tc.tagSig {
				t.Errorf("TagSignature = %q, want %q", got, tc.tagSig)
			}
			if p.HasTag() != (tc.tagSig != "") {
				t.Errorf("HasTag = %v", p.HasTag())
			}
			if tp := p.TagParam(); (tp == nil) != (tc.tagParam == "") || tp != nil && tp.Name != tc.tagParam {
				t.Errorf("TagParam = %v, want %q", tp, tc.tagParam)
			}
			if text, ok := p.TagText(); ok != (tc.tagText != "") || text != tc.tagText {
				t.Errorf("TagText = %q %v, want %q", text, ok, tc.tagText)
			}
			if p.Simple() != tc.simple {
				t.Errorf("Simple = %v, want %v", p.Simple(), tc.simple)
			}
			if ex := p.Example(); !p.Match(ex) || !strings.HasPrefix(ex, tc.prefix) || !globMatch(tc.glob, ex) {
				t.Errorf("Example %q: Match %v, glob %v", ex, p.Match(ex), globMatch(tc.glob, ex))
			}
			for _, m := range tc.match {
				if !p.Match(m) {
					t.Errorf("does not match %q", m)
				}
				if !globMatch(tc.glob, m) {
					t.Errorf("its glob misses %q", m)
				}
				if got, want := redisTag(m), tagOfSignature(p, m); got != want {
					t.Errorf("%q: Redis hashes %q, the pattern says %q", m, got, want)
				}
			}
			for _, m := range tc.refuse {
				if p.Match(m) {
					t.Errorf("matches %q", m)
				}
			}
		})
	}
}

// tagOfSignature is the tag a name of p has, read from p's tag parts (what
// TagSignature describes), for comparison with Redis's rule.
func tagOfSignature(p Pattern, name string) string {
	if !p.HasTag() {
		return name
	}
	return redisTag(name)
}

// redisTag is what Redis Cluster hashes of a name (cluster.c keyHashSlot): the
// text between the first '{' and the first '}' after it, when not empty; the
// whole name otherwise.
func redisTag(name string) string {
	open := strings.IndexByte(name, '{')
	if open < 0 {
		return name
	}
	end := strings.IndexByte(name[open+1:], '}')
	if end <= 0 {
		return name
	}
	return name[open+1 : open+1+end]
}

// globMatch is Redis's glob for patterns of literal text and '*'.
func globMatch(glob, s string) bool {
	star := strings.IndexByte(glob, '*')
	if star < 0 {
		return glob == s
	}
	if !strings.HasPrefix(s, glob[:star]) {
		return false
	}
	rest := glob[star+1:]
	for i := star; i <= len(s); i++ {
		if globMatch(rest, s[i:]) {
			return true
		}
	}
	return false
}

// Misuse of the pattern syntax is refused with a message that says what to
// write instead.
func TestPatternMisuse(t *testing.T) {
	for raw, want := range map[string]string{
		`{{orders:{n}}}:x`: `"{{" opens the hash tag around one placeholder`,
		`{{q}:x`:           `"{{" opens the hash tag around one placeholder`,
		`\{a:x`:            `a hash tag \{ without its \}`,
		`a:x\}`:            `a } that closes no hash tag`,
		`a:x}`:             `a } that closes nothing`,
		`\{\}:{q}`:         `an empty hash tag {}`,
		`\{a\}:\{b\}`:      `a second hash tag`,
		`{{q}}:{{x}}`:      `a second hash tag`,
		`x:{q\}:y`:         `a hash tag brace inside placeholder {q: a tag cannot split a placeholder`,
		`x:{q}{x}`:         `placeholders {q} and {x} touch`,
		`x:{q}_{x}`:        `placeholder {q} is followed by "_", and its values may hold "_"`,
		`x:{key}:{id}`:     `placeholder {key} is followed by ":"`,
		`a::b`:             `segment 2 is empty`,
		`:a`:               `segment 1 is empty`,
		`a\b`:              `a backslash escapes only a brace`,
		`a*b`:              `character "*"`,
		`a b`:              `character " "`,
		`x:{q`:             `a { without its }`,
		`{Q}`:              `placeholder {Q}: a name is [a-z][a-z0-9_]*`,
		`x:{q}:{q}`:        `placeholder {q} appears twice`,
		`{bull}:{q}`:       `placeholder {bull} has no type`,
	} {
		_, err := parsePattern(raw, usedParams(raw))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", raw, err, want)
		}
	}
	if _, err := parsePattern(`{bull}:jobs`, nil); err == nil || !strings.Contains(err.Error(), `write \{bull\}`) {
		t.Errorf("a literal tag written as a placeholder: %v, want the \\{bull\\} hint", err)
	}
}

// Two patterns overlap exactly when some name matches both; the witness is
// such a name. The shape search finds what sampling each side alone misses.
func TestOverlapWitness(t *testing.T) {
	for _, tc := range []struct {
		a, b    string
		witness string // "" when none
		certain bool
	}{
		{"t:{q}", "t:{x}", "t:a", true},
		{"t:item:{id}", "t:item:{n}", "", true},
		{"b_{id}_settings", "b_{q}", "b_00000000-0000-0000-0000-000000000000_settings", true},
		{"q:{q}_x", "q:y_{x}", "q:y_x", true},
		{"rate:{key}", "rate:user:{id}", "rate:user:00000000-0000-0000-0000-000000000000", true},
		{`\{bull\}:{q}:wait`, `\{bull\}:{q}:active`, "", true},
		{"{{q}}:jobs", `\{bull\}:jobs`, "{bull}:jobs", true},
		{`\{bull\}:{q}:wait`, "{{q}}:wait", "", true},
		{`\{bull\}:wait`, "{{q}}:wait", "{bull}:wait", true},
		{"n_{small}", "n_{h}", "", true},
		{"n_{small}", "n_{n}", "n_100", true},
		{`\{orders:lock:{n}\}:expiry`, `\{orders:lock:{q}\}:expiry`, "{orders:lock:0}:expiry", true},
		{"asynq:{{qname}}:pending", "asynq:{{qname}}:active", "", true},
		{"asynq:{{qname}}:pending", "asynq:{q}:pending", "", true},
	} {
		a, b := mustPattern(t, tc.a), mustPattern(t, tc.b)
		for _, order := range [][2]Pattern{{a, b}, {b, a}} {
			w, certain := overlapWitness(order[0], order[1])
			if (w == "") != (tc.witness == "") || certain != tc.certain {
				t.Errorf("%s vs %s: witness %q (certain %v), want %q (%v)", order[0].Raw, order[1].Raw, w, certain, tc.witness, tc.certain)
				continue
			}
			if w != "" && (!a.Match(w) || !b.Match(w)) {
				t.Errorf("%s vs %s: witness %q is not a name of both", tc.a, tc.b, w)
			}
		}
	}
}

// A key prefix covers a pattern when every name of the pattern starts with
// it; an exact prefix (no trailing ':') names one key.
func TestPrefixCovers(t *testing.T) {
	for _, tc := range []struct {
		prefix, raw string
		covers      bool
	}{
		{"{bull}:", `\{bull\}:{q}:wait`, true},
		{"bull:", `\{bull\}:{q}:wait`, false},
		{"rate:", "rate:{key}", true},
		{"rate:user:", "rate:{key}", false},
		{"{bull}:meta", `\{bull\}:meta`, true},
		{"{bull}:meta", `\{bull\}:{q}`, false},
		{"asynq:", "asynq:{{qname}}:t:{id}", true},
	} {
		p := &Prefix{Prefix: tc.prefix}
		if got := p.Covers(mustPattern(t, tc.raw)); got != tc.covers {
			t.Errorf("prefix %q covers %s = %v, want %v", tc.prefix, tc.raw, got, tc.covers)
		}
	}
}

// SameSlot holds exactly when every KEYS element's tag is provably one text.
func TestSameSlot(t *testing.T) {
	key := func(raw string) *Key { return &Key{Name: raw, Pattern: mustPattern(t, raw)} }
	pos := func(keys ...*Key) *ScriptKey { return &ScriptKey{Name: "k", OneOf: keys} }
	rep := func(max int, keys ...*Key) *ScriptKey {
		return &ScriptKey{Name: "k", OneOf: keys, Repeat: &Repeat{Min: 1, Max: max}}
	}
	for _, tc := range []struct {
		name   string
		keys   []*ScriptKey
		shared []string
		want   bool
	}{
		{"one key", []*ScriptKey{pos(key("a:{q}"))}, nil, true},
		{"fixed tags, equal", []*ScriptKey{pos(key(`\{bull\}:{q}:wait`)), pos(key(`\{bull\}:{q}:active`))}, nil, true},
		{"fixed tags, different", []*ScriptKey{pos(key(`\{bull\}:{q}:wait`)), pos(key(`\{bee\}:{q}:active`))}, nil, false},
		{"a tag placeholder, shared", []*ScriptKey{pos(key("s:{{q}}:data")), pos(key("s:{{q}}:lock"))}, []string{"q"}, true},
		{"a tag placeholder, not shared", []*ScriptKey{pos(key("s:{{q}}:data")), pos(key("s:{{q}}:lock"))}, nil, false},
		{"a tag spanning segments, shared", []*ScriptKey{pos(key(`\{orders:lock:{n}\}:expiry`)), pos(key(`\{orders:lock:{n}\}:owner`))}, []string{"n"}, true},
		{"tags of other text", []*ScriptKey{pos(key(`\{orders:lock:{n}\}:expiry`)), pos(key(`\{orders:{n}\}:owner`))}, []string{"n"}, false},
		{"no tag", []*ScriptKey{pos(key("a:{q}")), pos(key("b:{q}"))}, []string{"q"}, false},
		{"a repeating position, fixed tag", []*ScriptKey{rep(8, key(`\{locks\}:{q}`))}, nil, true},
		{"a repeating position without a tag", []*ScriptKey{rep(8, key("locks:{q}"))}, nil, false},
		{"a repeating position, shared tag placeholder", []*ScriptKey{rep(8, key("l:{{q}}:{x}"))}, []string{"q"}, true},
		{"a channel in KEYS", []*ScriptKey{pos(key(`\{bull\}:{q}`)), {Name: "c", Channel: &Channel{Name: "events"}}}, nil, false},
	} {
		s := &Script{Name: tc.name, Keys: tc.keys, SharedPlaceholders: tc.shared}
		if got := s.SameSlot(); got != tc.want {
			t.Errorf("%s: SameSlot = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzParsePattern: whatever the text, parsing never panics; a pattern it
// accepts produces names it matches, its glob and literal prefix hold for
// them, its tag is what Redis hashes, and it overlaps itself.
func FuzzParsePattern(f *testing.F) {
	for _, seed := range []string{"shop:cart:{id}", "session:{{id}}:data", "b_{id}_settings", `\{bull\}:{q}:wait`,
		`\{orders:lock:{n}\}:expiry`, "rate:{key}", "{{q}}:jobs", "asynq:{{qname}}:t:{id}", `\{a\}`, "{{{q}}}", `x:{q\}`, "a::b", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := parsePattern(raw, usedParams(raw))
		if err != nil {
			return
		}
		ex := p.Example()
		if !p.Match(ex) {
			t.Fatalf("%q: Example %q does not match", raw, ex)
		}
		if !strings.HasPrefix(ex, p.LiteralPrefix()) || !globMatch(p.Glob(), ex) {
			t.Fatalf("%q: Example %q outside its prefix %q or glob %q", raw, ex, p.LiteralPrefix(), p.Glob())
		}
		if tag := redisTag(ex); p.HasTag() == (tag == ex) && !strings.Contains(ex, "{"+ex+"}") {
			t.Fatalf("%q: HasTag %v, but Redis hashes %q of %q", raw, p.HasTag(), tag, ex)
		}
		if text, ok := p.TagText(); ok && redisTag(ex) != text {
			t.Fatalf("%q: fixed tag %q, Redis hashes %q", raw, text, redisTag(ex))
		}
		if w, _ := overlapWitness(p, p); w == "" {
			t.Fatalf("%q does not overlap itself", raw)
		}
	})
}
