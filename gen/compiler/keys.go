package compiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/gen/rediscmd"
)

// Resolved is what one key or channel argument of a call was proven to be.
type Resolved struct {
	Call int // index into Info.Calls
	Arg  int // index into the call's Args (the command name is 0)
	// Keys are the declared keys the argument may be: the keys of its KEYS
	// positions and the derived keys it was matched to.
	Keys []*keyspec.Key
	// Channels are the declared channels a built channel was matched to.
	Channels []*keyspec.Channel
	// Derived are the derived entries it was matched to.
	Derived []*keyspec.Derived
	// Unverified are parts of a derived name whose value the reading cannot
	// check against its placeholder (read from Redis, computed): the harness
	// checks them at run time. Each is "{placeholder} <- origin".
	Unverified []string
}

// expandKeys replaces a trailing spread of exactly KEYS[n..#KEYS] by its
// elements, KEYS[n] to KEYS[len(s.Keys)]: the wrapper passes exactly the
// declared KEYS.
func expandKeys(s *keyspec.Script, args []luascript.Arg) []luascript.Arg {
	n := len(args)
	if n == 0 || args[n-1].Kind != luascript.ArgSpread || args[n-1].KeysFrom == 0 {
		return args
	}
	if len(s.Keys) > 0 && s.Keys[len(s.Keys)-1].Repeat != nil {
		return args // how many KEYS a repeating position takes is the caller's: a spread of KEYS values (expandSpread)
	}
	out := append([]luascript.Arg{}, args[:n-1]...)
	for i := args[n-1].KeysFrom; i <= len(s.Keys); i++ {
		out = append(out, luascript.Arg{Kind: luascript.ArgKey, Key: i, KeyAlts: []int{i},
			Alts: []luascript.Str{{Parts: []luascript.Part{{Kind: luascript.PartKey, N: i}}}},
			Desc: fmt.Sprintf("KEYS[%d] (of %s)", i, args[n-1].Desc)})
	}
	return out
}

// checkKey proves the argument at a key position is a key the script may
// touch: KEYS[n], or a name built from an anchor as one of its derived keys
// declares. It returns what it resolved, and what it refuses.
func checkKey(s *keyspec.Script, c luascript.Call, a luascript.Arg, pos int, cmd *rediscmd.Command) (Resolved, []finding) {
	res := Resolved{Arg: pos}
	var out []finding
	seen := map[*keyspec.Key]bool{}
	addKey := func(k *keyspec.Key) {
		if !seen[k] {
			seen[k] = true
			res.Keys = append(res.Keys, k)
		}
	}
	if len(a.Alts) == 0 && a.Kind != luascript.ArgKey {
		// No value Redis accepts (nil, a boolean, a table): the call fails
		// before it touches anything.
		return res, nil
	}
	for _, alt := range a.Alts {
		line := c.Line
		if alt.Via > 0 {
			line = alt.Via
		}
		if n, ok := alt.Key(); ok {
			switch {
			case n == 0:
				for _, p := range s.Keys {
					for _, k := range p.OneOf {
						addKey(k)
					}
				}
			case s.KeyAt(n) != nil:
				for _, k := range s.KeyAt(n).OneOf {
					addKey(k)
				}
				// Beyond the declared KEYS: the signature check refuses the read.
			}
			continue
		}
		if k := argvKey(s, alt); k != nil {
			addKey(k) // the name an ARGV of type key carries, whole
			continue
		}
		ds, unverified, why := matchDerived(s, alt, false)
		if why != "" {
			out = append(out, finding{rule: RuleScriptKey, line: line, msg: keyRefusal(cmd, c, a, alt, pos, why)})
			continue
		}
		for _, d := range ds {
			addKey(d.Key)
			res.Derived = append(res.Derived, d)
		}
		res.Unverified = append(res.Unverified, unverified...)
	}
	return res, out
}

// keyRefusal is the message for a key argument that is not a key the script
// may touch.
func keyRefusal(cmd *rediscmd.Command, c luascript.Call, a luascript.Arg, alt luascript.Str, pos int, why string) string {
	where := ""
	if len(c.Via) > 0 {
		v := c.Via[len(c.Via)-1]
		where = fmt.Sprintf(" (line %d, in %s)", c.Line, v.Func)
	}
	it := a.Desc
	if it == alt.String() {
		it = describe(alt)
	}
	if d := describe(alt); d != it {
		if it == "" || strings.HasPrefix(it, "local ") || len(a.Alts) > 1 {
			it += ", which may be " + d
		}
	}
	if alt.Via > 0 {
		it += ", passed here"
	}
	return fmt.Sprintf("%s%s: argument %d of redis.%s is a key, and it is %s, %s", cmd.Display(), where, pos+1, c.Fn, it, why)
}

// describe names one alternative of an argument for messages.
func describe(s luascript.Str) string {
	if len(s.Parts) == 1 {
		p := s.Parts[0]
		switch p.Kind {
		case luascript.PartValue:
			return "a value the reading cannot name (" + p.Origin + ")"
		case luascript.PartNumber:
			return "a number"
		}
	}
	return s.String()
}

const notFromKeys = "not taken from KEYS: a script touches only the keys passed in KEYS; pass this key in KEYS and use KEYS[n] (or a local set from KEYS[n] and never assigned again)"

// matchDerived finds the derived entries of s the built name alt matches (keys,
// or channels when channel is set), or says why none does.
func matchDerived(s *keyspec.Script, alt luascript.Str, channel bool) (matched []*keyspec.Derived, unverified []string, why string) {
	first := alt.Parts[0]
	if first.Kind == luascript.PartValue && !channel && hasDataKeys(s) {
		return matchData(s, alt)
	}
	switch {
	case len(alt.Parts) == 1 && !channel:
		switch first.Kind {
		case luascript.PartValue:
			return nil, nil, "not taken from KEYS nor built from a KEYS anchor: a name read from Redis (or computed) can be any key; pass this key in KEYS, or build it from a KEYS position and declare it under the script's derived, or, on a standalone instance, declare the keys such names may be under derived with from: data (the ACL grants their patterns, the harness checks each name at run time)"
		case luascript.PartText:
			// A whole literal is a name built from its literal start alone.
			if ds, u, why := matchLiteral(s, alt, channel); why == "" {
				return ds, u, ""
			}
		}
		return nil, nil, notFromKeys
	case first.Kind == luascript.PartKey && first.N == 0:
		return nil, nil, "built from KEYS[i] with i not known: a derived name needs a known anchor; build it from KEYS[n]"
	case first.Kind == luascript.PartKey:
		anchor := s.KeyAt(first.N)
		if anchor == nil {
			return nil, nil, fmt.Sprintf("built from KEYS[%d], which the script does not declare", first.N)
		}
		return matchAnchored(s, alt, channel, anchor.OneOf, fmt.Sprintf("KEYS[%d] %q", first.N, anchor.Name), anchor.Name,
			func(d *keyspec.Derived) bool { return d.Anchor(s) == anchor })
	case first.Kind == luascript.PartArgv && s.ArgAt(first.N) != nil && s.ArgAt(first.N).Key != nil:
		a := s.ArgAt(first.N)
		return matchAnchored(s, alt, channel, []*keyspec.Key{a.Key}, fmt.Sprintf("ARGV[%d] %q", first.N, a.Name), a.Name,
			func(d *keyspec.Derived) bool { return d.FromArgv > 0 && s.Argv[d.FromArgv-1] == a })
	case first.Kind == luascript.PartText:
		return matchLiteral(s, alt, channel)
	}
	what := "key"
	if channel {
		what = "channel"
	}
	return nil, nil, fmt.Sprintf("a name that starts with %s: a derived %s starts with its anchor (KEYS[n]) or with its pattern's literal text", describe(luascript.Str{Parts: alt.Parts[:1]}), what)
}

// hasDataKeys reports whether the script declares a derived key read from
// data (from: data).
func hasDataKeys(s *keyspec.Script) bool {
	for _, d := range s.Derived {
		if d.FromData {
			return true
		}
	}
	return false
}

// dataPart is the index of the first part of a built name that is a value
// read from Redis, decoded or computed (0: none after the first).
func dataPart(alt luascript.Str) int {
	for i, p := range alt.Parts {
		if i > 0 && p.Kind == luascript.PartValue {
			return i
		}
	}
	return 0
}

// matchData matches a name that starts with a value read from Redis, decoded
// or computed (a parent job's key read from the job's hash, and names built
// on it) against the script's derived keys from data. Nothing before the run
// bounds such a name: what follows the value must be the end of the pattern
// (":dependencies" of "q:{q}:{id}:dependencies"), and every entry it may be is
// matched, for the ACL and the TTL checks; the whole name is checked by the
// harness at run time, and the ACL grants no name outside the patterns.
func matchData(s *keyspec.Script, alt luascript.Str) ([]*keyspec.Derived, []string, string) {
	var out []*keyspec.Derived
	var unverified []string
	var names []string
	origin := describe(luascript.Str{Parts: alt.Parts[:1]})
	for _, p := range alt.Parts {
		if p.Kind == luascript.PartValue && p.Folded {
			return nil, nil, fmt.Sprintf("a name built of %s, which the reading folded from values it stopped telling apart (it may hold an argument or a key of the script's, not only data): build the name so that the reading can follow it", describe(luascript.Str{Parts: []luascript.Part{p}}))
		}
	}
	for _, d := range s.Derived {
		if !d.FromData {
			continue
		}
		names = append(names, fmt.Sprintf("%s (%s)", d.Name(), d.Pattern().Raw))
		at := atoms(d.Pattern())
		for i := len(at); i >= 0; i-- {
			u, why := matchParts(s, alt.Parts[1:], at[i:])
			if why != "" {
				continue
			}
			out = append(out, d)
			unverified = append(unverified, "the name <- "+origin+" (from data)")
			unverified = append(unverified, u...)
			break
		}
	}
	if len(out) == 0 {
		return nil, nil, fmt.Sprintf("a name that starts with %s and ends in a way no derived key of the script from data does (%s): declare the key it is under derived with from: data", origin, strings.Join(names, ", "))
	}
	return out, unverified, ""
}

// atom is one piece of a pattern as names are matched against it: a literal
// byte or a whole placeholder.
type atom struct {
	c     byte
	param *keyspec.Param
}

func atoms(p keyspec.Pattern) []atom {
	var out []atom
	for _, pt := range p.Parts {
		if pt.Param != nil {
			out = append(out, atom{param: pt.Param})
			continue
		}
		for i := 0; i < len(pt.Literal); i++ {
			out = append(out, atom{c: pt.Literal[i]})
		}
	}
	return out
}

// matchAnchored matches a name built from an anchor (a KEYS position, or an
// ARGV of type key) against the script's derived entries from it: for every
// key the anchor may be, one entry must match.
func matchAnchored(s *keyspec.Script, alt luascript.Str, channel bool, anchorKeys []*keyspec.Key, anchorDesc, anchorName string, from func(*keyspec.Derived) bool) ([]*keyspec.Derived, []string, string) {
	var out []*keyspec.Derived
	var unverified []string
	for _, k := range anchorKeys {
		found := false
		var misses []string
		for _, d := range s.Derived {
			if !from(d) || (d.Channel != nil) != channel {
				continue
			}
			if _, ok := keyspec.AnchorTail(k.Pattern, d.Pattern()); !ok {
				continue
			}
			da := atoms(d.Pattern())
			start := len(atoms(k.Pattern))
			u, why := matchParts(s, alt.Parts[1:], da[start:])
			if why != "" {
				misses = append(misses, fmt.Sprintf("%s (%s): %s", d.Name(), d.Pattern().Raw, why))
				continue
			}
			found = true
			out = append(out, d)
			unverified = append(unverified, u...)
		}
		if !found && hasDataKeys(s) {
			// A name that goes on with a value read from data (an anchor,
			// then a state read from the task's hash) is as unbounded as
			// one that starts with it: the keys from data may be it.
			if i := dataPart(alt); i > 0 {
				ds, u, why := matchData(s, luascript.Str{Parts: alt.Parts[i:]})
				if why == "" {
					out = append(out, ds...)
					unverified = append(unverified, u...)
					continue
				}
			}
		}
		if !found {
			detail := ""
			if len(misses) > 0 {
				detail = "; " + strings.Join(misses, "; ")
			}
			return nil, nil, fmt.Sprintf("built from %s (key %q, %s), and no derived %s of the script from %s matches it%s: declare the name it builds under derived (- {%s: <name>, from: %s})",
				anchorDesc, k.Name, k.Pattern.Raw, kindWord(channel), anchorName, detail, kindWord(channel), anchorName)
		}
	}
	return out, unverified, ""
}

// argvKey is the key an ARGV of type key carries when alt is that ARGV whole.
func argvKey(s *keyspec.Script, alt luascript.Str) *keyspec.Key {
	if len(alt.Parts) != 1 || alt.Parts[0].Kind != luascript.PartArgv {
		return nil
	}
	if a := s.ArgAt(alt.Parts[0].N); a != nil {
		return a.Key
	}
	return nil
}

// matchLiteral matches a name that starts with literal text against the
// script's derived entries without an anchor.
func matchLiteral(s *keyspec.Script, alt luascript.Str, channel bool) ([]*keyspec.Derived, []string, string) {
	var misses []string
	for _, d := range s.Derived {
		if d.From != 0 || d.FromData || (d.Channel != nil) != channel {
			continue
		}
		u, why := matchParts(s, alt.Parts, atoms(d.Pattern()))
		if why == "" {
			return []*keyspec.Derived{d}, u, ""
		}
		misses = append(misses, fmt.Sprintf("%s (%s): %s", d.Name(), d.Pattern().Raw, why))
	}
	if len(alt.Parts) == 1 && !channel {
		return nil, nil, notFromKeys
	}
	detail := ""
	if len(misses) > 0 {
		detail = "; " + strings.Join(misses, "; ")
	}
	return nil, nil, fmt.Sprintf("a name built from literal text (%s) that no derived %s of the script matches%s: declare it under derived (- {%s: <name>})", alt.String(), kindWord(channel), detail, kindWord(channel))
}

func kindWord(channel bool) string {
	if channel {
		return "channel"
	}
	return "key"
}

// matchParts matches the parts of a built name against a pattern's atoms:
// literal text must be the pattern's literal text, and every other part must
// be one whole placeholder's value. An ARGV part must be declared with a type
// the placeholder accepts; a part the reading cannot check (read from Redis,
// computed) is returned as unverified, for the harness.
func matchParts(s *keyspec.Script, parts []luascript.Part, at []atom) ([]string, string) {
	var unverified []string
	i := 0
	for _, p := range parts {
		if p.Kind == luascript.PartText {
			for j := 0; j < len(p.Text); j++ {
				if i >= len(at) {
					return nil, fmt.Sprintf("the name goes on after the pattern ends (%q)", p.Text[j:])
				}
				if prm := at[i].param; prm != nil {
					// Literal text as a placeholder's value: up to the
					// pattern's next literal byte.
					end := len(p.Text)
					if i+1 < len(at) && at[i+1].param == nil {
						if k := strings.IndexByte(p.Text[j:], at[i+1].c); k >= 0 {
							end = j + k
						}
					}
					if v := p.Text[j:end]; !prm.Accepts(v) {
						return nil, fmt.Sprintf("%q is not a value of {%s}", v, prm.Name)
					}
					j = end - 1
					i++
					continue
				}
				if at[i].c != p.Text[j] {
					return nil, fmt.Sprintf("literal %q where the pattern has %q", p.Text[j:], rest(at[i:]))
				}
				i++
			}
			continue
		}
		if i >= len(at) {
			return nil, fmt.Sprintf("%s after the pattern ends", p.String())
		}
		if at[i].param == nil {
			return nil, fmt.Sprintf("%s where the pattern has literal %q: only literal text matches it", p.String(), rest(at[i:]))
		}
		prm := at[i].param
		switch p.Kind {
		case luascript.PartArgv:
			if why := argFits(s, p.N, prm); why != "" {
				return nil, why
			}
		case luascript.PartNumber:
			if prm.Type != keyspec.TypeInt && prm.Type != keyspec.TypeName {
				return nil, fmt.Sprintf("a number fills {%s}, a %s placeholder", prm.Name, prm.Type)
			}
			if p.Text == "" {
				unverified = append(unverified, "{"+prm.Name+"} <- "+p.Origin)
			} else if !prm.Accepts(p.Text) {
				return nil, fmt.Sprintf("%s is not a value of {%s}", p.Text, prm.Name)
			}
		default:
			unverified = append(unverified, "{"+prm.Name+"} <- "+describe(luascript.Str{Parts: []luascript.Part{p}}))
		}
		i++
	}
	if i < len(at) {
		return nil, fmt.Sprintf("the name stops where the pattern goes on (%q)", rest(at[i:]))
	}
	return unverified, ""
}

// rest is the pattern text from an atom on.
func rest(at []atom) string {
	var b strings.Builder
	for _, a := range at {
		if a.param != nil {
			b.WriteString("{" + a.param.Name + "}")
		} else {
			b.WriteByte(a.c)
		}
	}
	return b.String()
}

// argFits says why ARGV[n] may hold a value placeholder prm refuses ("" when
// every value the wrapper lets through is one the placeholder accepts).
func argFits(s *keyspec.Script, n int, prm *keyspec.Param) string {
	a := s.ArgAt(n)
	if a == nil {
		return fmt.Sprintf("ARGV[%s] fills {%s}, and the script declares no such ARGV", argIndex(n), prm.Name)
	}
	ok := false
	switch prm.Type {
	case keyspec.TypeUUID:
		ok = a.Type == keyspec.ArgUUID
	case keyspec.TypeInt:
		ok = a.Type == keyspec.ArgInt && a.Min >= prm.Min && a.Max <= prm.Max
	case keyspec.TypeHex:
		ok = a.Type == keyspec.ArgHex && a.Len == prm.Len
	case keyspec.TypeSHA256, keyspec.TypeHMAC:
		ok = a.Type == keyspec.ArgHex && a.Len == 64
	case keyspec.TypeName:
		switch a.Type {
		case keyspec.ArgName:
			ok = a.MaxLen <= prm.MaxLen
		case keyspec.ArgUUID:
			ok = prm.MaxLen >= 36
		case keyspec.ArgHex:
			ok = a.Len <= prm.MaxLen
		case keyspec.ArgToken:
			ok = prm.MaxLen >= 128
		case keyspec.ArgInt:
			ok = prm.MaxLen >= len(strconv.FormatInt(min(a.Min, -a.Max), 10))
		}
	}
	if a.Optional {
		ok = false // the empty string it sends when absent is no placeholder's value
	}
	if ok {
		return ""
	}
	fix := fmt.Sprintf("declare ARGV[%d] with a type every value of which {%s} accepts", n, prm.Name)
	switch {
	case a.Optional:
		fix = fmt.Sprintf("an optional ARGV sends \"\" when left out, which {%s} refuses: make ARGV[%d] required", prm.Name, n)
	case prm.Type == keyspec.TypeInt && a.Type == keyspec.ArgInt:
		fix = fmt.Sprintf("ARGV[%d] allows %d..%d: give it min: %d and max: %d (or narrower)", n, a.Min, a.Max, prm.Min, prm.Max)
	case prm.Type == keyspec.TypeName && a.Type == keyspec.ArgName:
		fix = fmt.Sprintf("ARGV[%d] allows max_len %d: give it max_len: %d (or shorter)", n, a.MaxLen, prm.MaxLen)
	case prm.Type == keyspec.TypeHex && a.Type == keyspec.ArgHex:
		fix = fmt.Sprintf("ARGV[%d] has len %d: give it len: %d", n, a.Len, prm.Len)
	}
	return fmt.Sprintf("ARGV[%d] %q (%s) fills {%s}, a %s placeholder: %s", n, a.Name, a.Type, prm.Name, describeParam(prm), fix)
}

func argIndex(n int) string {
	if n == 0 {
		return "i"
	}
	return strconv.Itoa(n)
}

func describeParam(p *keyspec.Param) string {
	switch p.Type {
	case keyspec.TypeName:
		return fmt.Sprintf("name (max_len %d)", p.MaxLen)
	case keyspec.TypeHex:
		return fmt.Sprintf("hex (len %d)", p.Len)
	case keyspec.TypeInt:
		return fmt.Sprintf("int (%d..%d)", p.Min, p.Max)
	}
	return p.Type
}

// checkChannel proves a channel the script builds by concatenation is one of
// the channels it declares it builds (derived channels). A literal channel,
// and a channel passed whole in KEYS or ARGV, are not built: the channel rules
// of the spec check them.
func checkChannel(s *keyspec.Script, c luascript.Call, a luascript.Arg, pos int, cmd *rediscmd.Command) (Resolved, []finding) {
	res := Resolved{Arg: pos}
	var out []finding
	for _, alt := range a.Alts {
		if lit, ok := alt.Literal(); ok {
			// A literal channel is the spec's channel rules' to check; one a
			// derived channel of the script matches counts as built.
			if ds, _, why := matchLiteral(s, luascript.Str{Parts: []luascript.Part{{Kind: luascript.PartText, Text: lit}}}, true); why == "" {
				for _, d := range ds {
					res.Channels = append(res.Channels, d.Channel)
					res.Derived = append(res.Derived, d)
				}
			}
			continue
		}
		if len(alt.Parts) < 2 {
			continue
		}
		line := c.Line
		if alt.Via > 0 {
			line = alt.Via
		}
		ds, unverified, why := matchDerived(s, alt, true)
		if why != "" {
			out = append(out, finding{rule: RuleScriptChannel, line: line, msg: fmt.Sprintf("%s: argument %d of redis.%s is a channel built by the script (%s): %s", cmd.Display(), pos+1, c.Fn, alt.String(), why)})
			continue
		}
		for _, d := range ds {
			res.Channels = append(res.Channels, d.Channel)
			res.Derived = append(res.Derived, d)
		}
		res.Unverified = append(res.Unverified, unverified...)
	}
	return res, out
}

// Reading is the script's reading with what each key and channel argument was
// proven to be, for golden files and for people: every call as the reader sees
// it (luascript.Call.String), then per key or channel argument the declared
// keys or channels it may be, the derived entries it matched and what of it
// only the harness checks at run time.
func (src *Source) Reading() string {
	var b strings.Builder
	for i, c := range src.Info.Calls {
		b.WriteString(c.String())
		b.WriteByte('\n')
		seen := map[string]bool{}
		for _, r := range src.Resolved {
			if r.Call != i {
				continue
			}
			var line strings.Builder
			b, outer := &line, &b
			var names []string
			for _, k := range r.Keys {
				names = append(names, fmt.Sprintf("%s (%s)", k.Name, k.Pattern.Raw))
			}
			for _, ch := range r.Channels {
				names = append(names, fmt.Sprintf("channel %s (%s)", ch.Name, ch.Pattern.Raw))
			}
			fmt.Fprintf(b, "    argument %d: %s", r.Arg+1, strings.Join(names, " | "))
			for _, d := range r.Derived {
				from := "its literal start"
				switch {
				case d.From > 0:
					from = fmt.Sprintf("KEYS[%d] %s", d.From, src.Script.Keys[d.From-1].Name)
				case d.FromArgv > 0:
					from = fmt.Sprintf("ARGV[%d] %s", d.FromArgv, src.Script.Argv[d.FromArgv-1].Name)
				case d.FromData:
					from = "data"
				}
				fmt.Fprintf(b, "; derived %s from %s", d.Name(), from)
			}
			if len(r.Unverified) > 0 {
				fmt.Fprintf(b, "; checked at run time: %s", strings.Join(r.Unverified, ", "))
			}
			if l := line.String(); !seen[l] {
				seen[l] = true // a spread tried at several lengths resolves alike
				outer.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}
