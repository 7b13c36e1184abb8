package strictyaml

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

type item struct {
	Name string               `yaml:"name"`
	N    int                  `yaml:"n"`
	Args map[string]yaml.Node `yaml:"args"`
}

type doc struct {
	Version int             `yaml:"version"`
	Items   map[string]item `yaml:"items"`
	List    []item          `yaml:"list"`
	Ptr     *item           `yaml:"ptr"`
	Plain   string
}

// strictDecode is what Decode replaces: yaml's own decoder with KnownFields,
// whose messages Decode must repeat exactly.
func strictDecode(src []byte) []string {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	var d doc
	if err := dec.Decode(&d); err != nil {
		return Messages(err)
	}
	return nil
}

// Decode reports what one strict yaml decode reports, in the same words and
// order, for unknown fields at every depth (maps, sequences, pointers, merge
// keys, aliases) and type errors mixed with them; a yaml.Node field takes
// anything.
func TestDecodeIsAsStrictAsTheDecoder(t *testing.T) {
	for _, src := range []string{
		"version: 1\nitems:\n  a: {name: x, n: 2, args: {anything: {goes: [1]}}}\nlist:\n  - {name: y}\nptr: {n: 3}\nplain: p\n",
		"version: 1\ncolour: red\n",
		"items:\n  a: {name: x, nope: 1}\n  b: {n: two, also: 2}\n",
		"list:\n  - {name: y, bad: 1}\n  - nope\nptr: {zz: 1}\n",
		"base: &b {name: x, extra: 1}\nitems:\n  a: *b\n",
		"items:\n  a:\n    <<: {name: x, other: 1}\n    n: 1\n",
		"items:\n  a:\n    <<: [{name: x}, {wrong: 2}]\n",
		"version: [1]\nitems: {a: {n: 1, unknown: true}}\n",
	} {
		var d doc
		_, _, err := Decode([]byte(src), &d)
		var got []string
		if err != nil {
			got = Messages(err)
		}
		if diff := cmp.Diff(strictDecode([]byte(src)), got); diff != "" {
			t.Errorf("%q (-yaml +Decode):\n%s", src, diff)
		}
	}
}

// Lines holds every entry's line; a path without one takes its enclosing
// entry's, and 1 at the top.
func TestLines(t *testing.T) {
	var d doc
	ln, _, err := Decode([]byte("version: 1\nitems:\n  a:\n    name: x\nlist:\n  - {name: y}\n  - name: z\n"), &d)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"version": 1, "items": 2, "items.a": 3, "items.a.name": 4, "items.a.n": 3, "list[0]": 6, "list[1].name": 7, "nothing": 1, "": 1} {
		if got := ln.Line(path); got != want {
			t.Errorf("Line(%q) = %d, want %d", path, got, want)
		}
	}
	if d.Items["a"].Name != "x" || len(d.List) != 2 || d.List[1].Name != "z" {
		t.Errorf("decoded %+v", d)
	}
	if _, _, err := Decode([]byte("# only a comment\n"), &d); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	if _, _, err := Decode([]byte("a: [\n"), &d); err == nil {
		t.Error("a syntax error decoded")
	}
	if line, msg, ok := MessageLine("yaml: line 7: did not find expected key"); !ok || line != 7 || msg != "did not find expected key" {
		t.Errorf("MessageLine: %d %q %v", line, msg, ok)
	}
}

// A null item of a list (an empty "-", ~, null), which yaml's decoder drops
// without a word, moving the items after it up, is an error at its line.
func TestDecodeRefusesANullItemOfAList(t *testing.T) {
	for src, want := range map[string]string{
		"list:\n  -\n  - {name: a}\n":       "line 2: a null list item (an empty '-', ~ or null) where strictyaml.item is expected: fill it in or remove it",
		"list:\n  - {name: a}\n  - ~\n":     "line 3: a null list item (an empty '-', ~ or null) where strictyaml.item is expected: fill it in or remove it",
		"list: [{name: a}, null]\n":         "line 1: a null list item (an empty '-', ~ or null) where strictyaml.item is expected: fill it in or remove it",
		"list: [{name: a}, {}]\nplain: x\n": "",
	} {
		var d doc
		_, _, err := Decode([]byte(src), &d)
		got := ""
		if err != nil {
			got = Messages(err)[0]
		}
		if got != want {
			t.Errorf("%q: %q, want %q", src, got, want)
		}
	}
	var s struct {
		L []string `yaml:"l"`
	}
	if _, _, err := Decode([]byte("l: [a, ~, b]\n"), &s); err == nil || Messages(err)[0] != "line 1: a null list item (an empty '-', ~ or null) where string is expected: fill it in or remove it" {
		t.Errorf("a list of strings: %v %q", err, s.L)
	}
}
