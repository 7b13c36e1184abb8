// Package strictyaml decodes one YAML document strictly (a key that names no
// field of the struct it decodes into is an error) from a single parse, and
// keeps the line of every entry, so that the spec parsers (gen/keyspec,
// gen/sizing) name the line of each mistake they find after decoding.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrEmpty is the error of Decode for a source that holds no document.
var ErrEmpty = errors.New("no YAML document")

// Lines maps an entry's path ("keys.session", "scripts.x.argv[2]") to the line
// of its key (of its item, in a sequence).
type Lines map[string]int

// Line is the line of path, or of its nearest enclosing entry, or 1.
func (l Lines) Line(path string) int {
	for path != "" {
		if n, ok := l[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 1
}

func (l Lines) index(path string, n *yaml.Node) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			l[p] = k.Line
			l.index(p, v)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			l[p] = c.Line
			l.index(p, c)
		}
	}
}

// Decode parses the first document of src once and decodes it into v (a
// pointer to a struct) strictly. It returns the document's lines and the
// decoder, positioned after the document (to refuse a second one). The error
// is ErrEmpty, a syntax error, or a *yaml.TypeError holding every type and
// unknown-field message in line order ("line 12: field x not found in type
// pkg.rawKey"), as one strict yaml decode words them.
func Decode(src []byte, v any) (Lines, *yaml.Decoder, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var root yaml.Node
	switch err := dec.Decode(&root); {
	case errors.Is(err, io.EOF):
		return nil, nil, ErrEmpty
	case err != nil:
		return nil, nil, err
	}
	if len(root.Content) == 0 {
		return nil, nil, ErrEmpty
	}
	var msgs []string
	if err := root.Decode(v); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, nil, err
		}
		msgs = te.Errors
	}
	// yaml.Node.Decode has no KnownFields: unknownFields is that check.
	if unknown := unknownFields(root.Content[0], reflect.TypeOf(v)); len(unknown) > 0 {
		msgs = mergeByLine(msgs, unknown)
	}
	if len(msgs) > 0 {
		return nil, nil, &yaml.TypeError{Errors: msgs}
	}
	ln := Lines{}
	ln.index("", root.Content[0])
	return ln, dec, nil
}

// lineMsg reads a decoder message that names its line.
var lineMsg = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// MessageLine splits a decoder message "line 12: what" (with or without the
// "yaml: " prefix) into 12 and "what"; ok is false for a message without a line.
func MessageLine(m string) (line int, msg string, ok bool) {
	sm := lineMsg.FindStringSubmatch(m)
	if sm == nil {
		return 0, m, false
	}
	line, _ = strconv.Atoi(sm[1])
	return line, sm[2], true
}

// Join is the text of a list of problems of one file: each error's text, one
// a line (the Error of keyspec.List and sizing.List).
func Join[E error](errs []E) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Messages are the decoder's messages of err: each of a *yaml.TypeError, or
// err's own text.
func Messages(err error) []string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return te.Errors
	}
	return []string{err.Error()}
}

// unknownFields is yaml's KnownFields check over a decoded node: every key of
// a mapping decoded into a struct must be one of the struct's fields, each
// reported as the decoder words it ("line N: field x not found in type
// keyspec.rawKey"); and a null item of a list, which the decoder
// drops (or, into a list of pointers, keeps as nil), is an error. It follows aliases and merge keys ("<<") as the decoder
// does; the raw types have no inline fields and no custom unmarshalers.
func unknownFields(n *yaml.Node, t reflect.Type) []string {
	var out []string
	var walk func(n *yaml.Node, t reflect.Type, seen map[string]bool)
	walk = func(n *yaml.Node, t reflect.Type, seen map[string]bool) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nodeType {
			return // a yaml.Node field takes any value, as the decoder does
		}
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return
			}
			n = n.Alias
		}
		switch {
		case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
			for _, c := range n.Content {
				if isNull(c) && t.Elem().Kind() != reflect.Interface && t.Elem() != nodeType {
					// The decoder drops it, silently: the items after it move up.
					out = append(out, fmt.Sprintf("line %d: a null list item (an empty '-', ~ or null) where %s is expected: fill it in or remove it", c.Line, t.Elem()))
					continue
				}
				walk(c, t.Elem(), nil)
			}
		case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if isMergeKey(n.Content[i]) {
					walkMerge(n.Content[i+1], func(m *yaml.Node) { walk(m, t, nil) })
					continue
				}
				walk(n.Content[i+1], t.Elem(), nil)
			}
		case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
			fields := yamlFields(t)
			own := seen
			if own == nil {
				own = map[string]bool{}
			}
			var merges []*yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if isMergeKey(k) {
					merges = append(merges, n.Content[i+1])
					continue
				}
				if k.Kind != yaml.ScalarNode || (seen != nil && seen[k.Value]) {
					continue
				}
				own[k.Value] = true
				ft, ok := fields[k.Value]
				if !ok {
					out = append(out, fmt.Sprintf("line %d: field %s not found in type %s", k.Line, k.Value, t))
					continue
				}
				walk(n.Content[i+1], ft, nil)
			}
			for _, m := range merges {
				walkMerge(m, func(m *yaml.Node) { walk(m, t, own) })
			}
		}
	}
	walk(n, t, nil)
	return out
}

// isNull reports whether n is YAML's null (~, null or nothing).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// nodeType is yaml.Node, which the decoder fills with the node itself.
var nodeType = reflect.TypeOf(yaml.Node{})

// walkMerge calls f with each mapping a merge key's value names: a mapping,
// an alias of one, or a sequence of those.
func walkMerge(v *yaml.Node, f func(*yaml.Node)) {
	if v.Kind == yaml.SequenceNode {
		for _, c := range v.Content {
			f(c)
		}
		return
	}
	f(v)
}

// isMergeKey reports whether k is YAML's merge key "<<".
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.Tag == "!!merge" || k.Tag == "tag:yaml.org,2002:merge")
}

// yamlFields maps the yaml names of a struct's exported fields to their types
// (the tag's name, else the field's name in lower case, as yaml does).
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

// mergeByLine merges two lists of decoder messages, each in document order,
// into one in line order (the order one strict decode reports them in).
func mergeByLine(a, b []string) []string {
	lineOf := func(m string) int {
		n, _, _ := MessageLine(m)
		return n
	}
	out := append(append(make([]string, 0, len(a)+len(b)), a...), b...)
	sort.SliceStable(out, func(i, j int) bool { return lineOf(out[i]) < lineOf(out[j]) })
	return out
}
