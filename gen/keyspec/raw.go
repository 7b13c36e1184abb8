package keyspec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hanchat/luagen/gen/strictyaml"
	"go.yaml.in/yaml/v3"
)

// The raw* types mirror keyspec.yaml field for field; decoding into them is strict
// (an unknown field is an error). Scalars whose meaning depends on a sibling field
// (min and max of an int or a duration) stay strings until the entry is resolved.

type rawSpec struct {
	Version   int                    `yaml:"version"`
	Forbid    []rawForbid            `yaml:"forbid"`
	Instances map[string]rawInstance `yaml:"instances"`
	Users     map[string]rawUser     `yaml:"users"`
	Enums     map[string]rawEnum     `yaml:"enums"`
	Keys      map[string]rawKey      `yaml:"keys"`
	Channels  map[string]rawChannel  `yaml:"channels"`
	Scripts   map[string]rawScript   `yaml:"scripts"`
	Breaking  *rawBreaking           `yaml:"breaking"`
	Alerts    []rawAlert             `yaml:"alerts"`
}

// Every entry that can cite where it comes from has Source and its deprecated
// alias Seed (the field's name before the language was general).

type rawInstance struct {
	Seed             string               `yaml:"seed"`
	Source           string               `yaml:"source"`
	Topology         string               `yaml:"topology"`
	Client           string               `yaml:"client"`
	Mode             string               `yaml:"mode"`
	DeploymentPrefix *rawDeploymentPrefix `yaml:"deployment_prefix"`
	Forbid           []rawForbid          `yaml:"forbid"`
	Server           *rawServer           `yaml:"server"`
	Servers          map[string]rawServer `yaml:"servers"`
	DBs              map[string]rawDB     `yaml:"dbs"`
	CoverageFloor    *rawCoverageFloor    `yaml:"coverage_floor"`
}

type rawDeploymentPrefix struct {
	Env         string `yaml:"env"`
	DefaultFrom string `yaml:"default_from"`
	MaxLen      int    `yaml:"max_len"`
	Source      string `yaml:"source"`
}

type rawServer struct {
	Source      string         `yaml:"source"`
	Doc         string         `yaml:"doc"`
	Persistence rawPersistence `yaml:"persistence"`
	Eviction    rawEviction    `yaml:"eviction"`
	TBD         []string       `yaml:"tbd"`
}

type rawPersistence struct {
	Mode   string `yaml:"mode"`
	Seed   string `yaml:"seed"`
	Source string `yaml:"source"`
}

type rawEviction struct {
	Policy string `yaml:"policy"`
	Reason string `yaml:"reason"`
}

type rawForbid struct {
	Kind       string   `yaml:"kind"`
	Words      []string `yaml:"words"`
	Value      string   `yaml:"value"`
	Commands   []string `yaml:"commands"`
	Shape      string   `yaml:"shape"`
	UnlessKind []string `yaml:"unless_kind"`
	TTL        string   `yaml:"ttl"`
	Unbounded  string   `yaml:"unbounded"`
	Seed       string   `yaml:"seed"`
	Source     string   `yaml:"source"`
}

type rawDB struct {
	Index  *int       `yaml:"index"`
	URLEnv string     `yaml:"url_env"`
	User   string     `yaml:"user"`
	Seed   string     `yaml:"seed"`
	Source string     `yaml:"source"`
	Doc    string     `yaml:"doc"`
	Legacy *rawLegacy `yaml:"legacy"`
	Server string     `yaml:"server"`
}

type rawLegacy struct {
	State string `yaml:"state"`
}

type rawUser struct {
	Instance        string      `yaml:"instance"`
	Seed            string      `yaml:"seed"`
	Source          string      `yaml:"source"`
	Select          *rawSelect  `yaml:"select"`
	KeyPrefixes     []rawPrefix `yaml:"key_prefixes"`
	ChannelPrefixes []rawPrefix `yaml:"channel_prefixes"`
	ExtraCommands   []rawExtra  `yaml:"extra_commands"`
}

type rawExtra struct {
	Command  string `yaml:"command"`
	Reason   string `yaml:"reason"`
	LegacyDB string `yaml:"legacy_db"`
}

type rawSelect struct {
	Allow  bool   `yaml:"allow"`
	Reason string `yaml:"reason"`
}

type rawPrefix struct {
	Prefix   *string `yaml:"prefix"`
	Seed     string  `yaml:"seed"`
	Source   string  `yaml:"source"`
	Reason   string  `yaml:"reason"`
	LegacyDB string  `yaml:"legacy_db"`
}

type rawEnum struct {
	Seed   string   `yaml:"seed"`
	Source string   `yaml:"source"`
	Values []string `yaml:"values"`
}

type rawKey struct {
	Seed      string              `yaml:"seed"`
	Source    string              `yaml:"source"`
	Doc       string              `yaml:"doc"`
	DB        string              `yaml:"db"`
	Kind      string              `yaml:"kind"`
	Pattern   string              `yaml:"pattern"`
	Params    map[string]rawParam `yaml:"params"`
	Value     []string            `yaml:"value"`
	Fields    []string            `yaml:"fields"`
	MaxBytes  int                 `yaml:"max_bytes"`
	MaxLen    int                 `yaml:"max_len"`
	Retention string              `yaml:"retention"`
	TTL       *rawTTL             `yaml:"ttl"`
}

type rawParam struct {
	Type   string `yaml:"type"`
	Doc    string `yaml:"doc"`
	Min    string `yaml:"min"`
	Max    string `yaml:"max"`
	Len    int    `yaml:"len"`
	MaxLen int    `yaml:"max_len"`
	Enum   string `yaml:"enum"`
	Encode string `yaml:"encode"`
}

type rawTTL struct {
	Rule      string `yaml:"rule"`
	Value     string `yaml:"value"`
	MaxJitter string `yaml:"max_jitter"`
	Max       string `yaml:"max"`
	Exceeds   string `yaml:"exceeds"`
	From      string `yaml:"from"`
	Reason    string `yaml:"reason"`
	Persist   string `yaml:"persist"`
}

type rawChannel struct {
	Seed     string              `yaml:"seed"`
	Source   string              `yaml:"source"`
	Instance string              `yaml:"instance"`
	Pattern  string              `yaml:"pattern"`
	Params   map[string]rawParam `yaml:"params"`
	MaxBytes int                 `yaml:"max_bytes"`
	Server   string              `yaml:"server"`
}

type rawScript struct {
	Seed               string         `yaml:"seed"`
	Source             string         `yaml:"source"`
	Doc                string         `yaml:"doc"`
	Instance           string         `yaml:"instance"`
	Kind               string         `yaml:"kind"`
	ReadOnly           bool           `yaml:"read_only"`
	CrossSlot          string         `yaml:"cross_slot"`
	ReplaySafe         string         `yaml:"replay_safe"`
	Keys               []rawScriptKey `yaml:"keys"`
	SharedPlaceholders []string       `yaml:"shared_placeholders"`
	Argv               []rawArg       `yaml:"argv"`
	Reply              *rawReply      `yaml:"reply"`
	Errors             []rawError     `yaml:"errors"`
	Derived            []rawDerived   `yaml:"derived"`
}

type rawScriptKey struct {
	Name    string     `yaml:"name"`
	Doc     string     `yaml:"doc"`
	OneOf   []string   `yaml:"one_of"`
	Channel string     `yaml:"channel"`
	Repeat  *rawRepeat `yaml:"repeat"`
	Unused  *rawUnused `yaml:"unused"`
	Creates *bool      `yaml:"creates"`
}

type rawRepeat struct {
	Min *int `yaml:"min"`
	Max int  `yaml:"max"`
}

type rawUnused struct {
	Reason string `yaml:"reason"`
}

type rawArg struct {
	Name     string     `yaml:"name"`
	Type     string     `yaml:"type"`
	Doc      string     `yaml:"doc"`
	Optional bool       `yaml:"optional"`
	Min      string     `yaml:"min"`
	Max      string     `yaml:"max"`
	MaxBytes int        `yaml:"max_bytes"`
	Len      int        `yaml:"len"`
	MaxLen   int        `yaml:"max_len"`
	TTLOf    string     `yaml:"ttl_of"`
	MaxLenOf string     `yaml:"max_len_of"`
	Channel  string     `yaml:"channel"`
	Repeat   *rawRepeat `yaml:"repeat"`
	Unused   *rawUnused `yaml:"unused"`
	Key      string     `yaml:"key"`
	Enum     string     `yaml:"enum"`
}

type rawReply struct {
	ByArg    string              `yaml:"by_arg"`
	Shapes   map[string]rawReply `yaml:"shapes"`
	TypeName string              `yaml:"type_name"`
	Fields   []rawField          `yaml:"fields"`
	Type     string              `yaml:"type"`
	Name     string              `yaml:"name"`
	Doc      string              `yaml:"doc"`
	Enum     string              `yaml:"enum"`
	Nullable bool                `yaml:"nullable"`
	Of       string              `yaml:"of"`
}

type rawField struct {
	Name     string     `yaml:"name"`
	Type     string     `yaml:"type"`
	Doc      string     `yaml:"doc"`
	Enum     string     `yaml:"enum"`
	Nullable bool       `yaml:"nullable"`
	TypeName string     `yaml:"type_name"`
	Fields   []rawField `yaml:"fields"`
	Of       string     `yaml:"of"`
}

type rawError struct {
	Code string `yaml:"code"`
	Doc  string `yaml:"doc"`
}

// friendly names for the raw types in the decoder's messages.
var rawTypeNames = strings.NewReplacer(
	"in type keyspec.rawKey", "in a key", "in type keyspec.rawScript", "in a script",
	"in type keyspec.rawArg", "in an ARGV entry", "in type keyspec.rawParam", "in a param",
	"keyspec.rawSpec", "the spec", "keyspec.rawInstance", "an instance", "keyspec.rawForbid", "a forbid entry",
	"keyspec.rawDB", "a db", "keyspec.rawLegacy", "legacy", "keyspec.rawUser", "a user",
	"keyspec.rawSelect", "select", "keyspec.rawPrefix", "a prefix", "keyspec.rawEnum", "an enum",
	"keyspec.rawKey", "a key", "keyspec.rawParam", "a param", "keyspec.rawTTL", "ttl",
	"keyspec.rawChannel", "a channel", "keyspec.rawScript", "a script", "keyspec.rawScriptKey", "a KEYS entry",
	"keyspec.rawArg", "an ARGV entry", "keyspec.rawReply", "reply", "keyspec.rawField", "a reply field",
	"keyspec.rawError", "an error entry", "keyspec.rawServer", "server", "keyspec.rawPersistence", "persistence",
	"keyspec.rawEviction", "eviction", "keyspec.rawExtra", "an extra command",
	"keyspec.rawDeploymentPrefix", "deployment_prefix", "keyspec.rawRepeat", "repeat", "keyspec.rawUnused", "unused", "keyspec.rawDerived", "a derived entry",
	"keyspec.rawBreaking", "breaking",
	"keyspec.rawIgnore", "an ignore entry", "keyspec.rawCoverageFloor", "coverage_floor",
	"keyspec.rawAlertTest", "an alert's test", "keyspec.rawAlertSeries", "a test series", "keyspec.rawAlert", "an alert",
)

// renamed are fields that changed name, with what to write instead.
var renamed = map[string]string{
	"field source not found in ttl":             ": a clamped TTL's origin is now from (from: the DNS answer); the key's source says where its bounds come from",
	"field poll_budget not found in legacy":     ": a budget is now the TTL's floor: ttl: {..., exceeds: 20m} on each key of the database",
	"field recovery_budget not found in legacy": ": a budget is now the TTL's floor: ttl: {..., exceeds: 20m} on each key of the database",
}

// decodeRaw decodes src strictly and indexes the line of every entry.
func decodeRaw(file string, src []byte) (*rawSpec, strictyaml.Lines, error) {
	// One parse gives both the raw values and every entry's line (decoding
	// the source a second time for its lines took some 40% of luagen
	// breaking and diff).
	var raw rawSpec
	ln, dec, err := strictyaml.Decode(src, &raw)
	switch {
	case errors.Is(err, strictyaml.ErrEmpty):
		return nil, nil, &Error{Pos: Pos{File: file, Line: 1}, Msg: "the spec is empty"}
	case err != nil:
		// Only on the way to an error is the document read again, as nodes:
		// they explain an unknown field a comma split off a flow map's string.
		var root yaml.Node
		if yaml.Unmarshal(src, &root) != nil {
			return nil, nil, yamlErrors(file, src, nil, err)
		}
		return nil, nil, yamlErrors(file, src, &root, err)
	}
	// A second document would be ignored by the decoder, silently: refuse it.
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, nil, yamlErrors(file, src, nil, err)
	default:
		return nil, nil, List{&Error{Pos: Pos{File: file, Line: secondDocument(src, next.Line)}, Msg: "a second YAML document ('---'): a spec is one document; everything after the first would be ignored"}}
	}
	return &raw, ln, nil
}

// secondDocument is the line of the "---" or "..." that ends the first
// document (a "---" before any content starts it), or else line, the second
// document's first node.
func secondDocument(src []byte, line int) int {
	content := false
	for i, l := range strings.Split(string(src), "\n") {
		t := strings.TrimRight(l, " \t\r")
		switch {
		case t == "---" || strings.HasPrefix(t, "--- ") || t == "...":
			if content {
				return i + 1
			}
		case strings.TrimSpace(t) != "" && !strings.HasPrefix(strings.TrimSpace(t), "#") && !strings.HasPrefix(t, "%"):
			content = true
		}
	}
	return max(line, 1)
}

// checkText refuses what YAML either rejects without a line or accepts and shows
// a reader otherwise: bytes that are not UTF-8, control characters (a tab
// aside), and the bidirectional-text controls that make an editor display
// another text than the parser reads. The error names the line.
func checkText(file string, src []byte) error {
	line := 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		msg := ""
		switch {
		case r == utf8.RuneError && size <= 1:
			msg = fmt.Sprintf("byte 0x%02x is not UTF-8", src[i])
		case r == '\n':
			line++
		case r == '\t' || r == '\r' || (r == '\ufeff' && i == 0):
		default:
			msg = runeProblem(r)
		}
		if msg != "" {
			return List{&Error{Pos: Pos{File: file, Line: line}, Msg: msg}}
		}
		i += size
	}
	return nil
}

// runeProblem says what is wrong with r in the spec's text, or "": a
// control character, or an invisible or bidirectional-text control that makes
// an editor (or an operator's screen) display another text than is read.
func runeProblem(r rune) string {
	switch {
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return fmt.Sprintf("control character %U", r)
	case unicode.Is(unicode.Bidi_Control, r) || r == '\u200b' || r == '\ufeff':
		return fmt.Sprintf("invisible or bidirectional-text control %U (the text would read otherwise than it parses)", r)
	}
	return ""
}

// quotedRe finds the text a YAML message quotes ('x' or `x`).
var quotedRe = regexp.MustCompile("['`]([^'`]+)['`]")

// lineOf is the line of the first occurrence of text in src, or 1.
func lineOf(src []byte, text string) int {
	if i := bytes.Index(src, []byte(text)); i >= 0 {
		return 1 + bytes.Count(src[:i], []byte("\n"))
	}
	return 1
}

// unknownFieldRe reads the decoder's message of a field no type has.
var unknownFieldRe = regexp.MustCompile(`^field (\S+) not found in `)

// yamlErrors turns the decoder's messages into errors that name file and line.
// A message without a line ("unknown anchor 'x' referenced") gets the line of
// what it quotes, else line 1: every error names a line. root, when not nil,
// is the decoded document, which explains an unknown field that a comma split
// off an unquoted string in a flow map.
func yamlErrors(file string, src []byte, root *yaml.Node, err error) error {
	var list List
	split := map[*yaml.Node]bool{} // the strings a comma split, each reported once
	for _, m := range strictyaml.Messages(err) {
		e := &Error{Pos: Pos{File: file, Line: 1}, Msg: friendly(strings.TrimPrefix(m, "yaml: "))}
		if line, msg, ok := strictyaml.MessageLine(m); ok {
			e.Line = line
			e.Msg = friendly(msg)
		} else if q := quotedRe.FindStringSubmatch(m); q != nil {
			anchor := q[1]
			if strings.Contains(m, "anchor") {
				anchor = "*" + anchor
			}
			e.Line = lineOf(src, anchor)
		} else if strings.Contains(m, "!!binary") {
			e.Line = lineOf(src, "!!binary")
		}
		if hint, ok := renamed[e.Msg]; ok {
			e.Msg += hint
		}
		if fm := unknownFieldRe.FindStringSubmatch(e.Msg); fm != nil && root != nil {
			if str, hint := splitFlowString(root, src, e.Line, fm[1]); str != nil {
				if split[str] {
					continue
				}
				split[str] = true
				e.Msg += hint
			}
		}
		list = append(list, e)
	}
	return list
}

// friendly names the raw types of a decoder's message as the spec does ("field
// x not found in a db", not "in type keyspec.rawDB").
func friendly(msg string) string {
	return strings.ReplaceAll(rawTypeNames.Replace(msg), " not found in type ", " not found in ")
}

// splitFlowString explains an unknown field at line that is, in a flow map
// ({doc: scores, leaderboards}), a key without a value after a field's
// unquoted string on the same line: YAML ends a plain string at ", " inside
// braces, so the rest reads as keys of their own. It returns the string's
// node (one report per string, however many keys the commas made) and the
// hint, or nil when the field is no such piece.
func splitFlowString(root *yaml.Node, src []byte, line int, field string) (*yaml.Node, string) {
	var found *yaml.Node
	var hint string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if found != nil || n == nil {
			return
		}
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0 {
			for i := 2; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Value != field || k.Line != line || !bareKey(n.Content[i+1]) {
					continue
				}
				// Back over the keys the same string's other commas made, to the string.
				j := i - 1
				for j >= 3 && bareKey(n.Content[j]) && n.Content[j-1].Line == line {
					j -= 2
				}
				str, name := n.Content[j], n.Content[j-1]
				if str.Kind != yaml.ScalarNode || str.Style != 0 || bareKey(str) || str.Line != line {
					continue
				}
				// The whole string as written: from it through the last key its commas made.
				last := i
				for last+3 < len(n.Content) && n.Content[last+2].Line == line && bareKey(n.Content[last+3]) {
					last += 2
				}
				end := n.Content[last]
				text := lineText(src, line)
				from, to := str.Column-1, end.Column-1+utf8.RuneCountInString(end.Value)
				if from < 0 || to > len(text) || from >= to {
					continue
				}
				whole := string(text[from:to])
				found = str
				hint = fmt.Sprintf(": a comma ended the unquoted string of %s (%q) and made %s a field of its own; in a flow map {...} quote a string holding \", \": %s: %s",
					name.Value, str.Value, k.Value, name.Value, strconv.Quote(whole))
				return
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	return found, hint
}

// bareKey reports a value YAML gave a flow map's key written alone ("b" of
// {a: x, b}): an implicit null.
func bareKey(v *yaml.Node) bool {
	return v.Kind == yaml.ScalarNode && v.Tag == "!!null" && v.Value == "" && v.Style == 0
}

// lineText is line (1-based) of src, as runes (the decoder counts columns in
// characters).
func lineText(src []byte, line int) []rune {
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) {
		return nil
	}
	return []rune(strings.TrimRight(lines[line-1], "\r"))
}
