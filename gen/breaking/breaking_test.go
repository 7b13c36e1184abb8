package breaking

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/snapshot"
)

var update = flag.Bool("update", false, "rewrite testdata/cases/*/want.txt from the rules")

// dirSnapshot reads a fixture revision and fails the test on any problem the
// compiler finds in it: the fixtures are valid specs and scripts.
func dirSnapshot(t *testing.T, label, dir string) *snapshot.Snapshot {
	t.Helper()
	lua := filepath.Join(dir, "lua")
	if _, err := os.Stat(lua); err != nil {
		lua = "testdata/base/lua"
	}
	s, err := snapshot.Dir(label, filepath.Join(dir, "keyspec.yaml"), lua)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Problems {
		t.Errorf("%s: %s: %v", dir, p.Rule, p.Err)
	}
	return s
}

func render(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String())
		if f.Ignored != "" {
			b.WriteString(" (ignored: " + f.Ignored + ")")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Each case is testdata/base changed in one way (its keyspec.yaml, and its
// lua/ when it has one). A case named after a rule finds that rule (and its
// want.txt holds every finding, golden); every rule has its case; the cases
// unchanged and compatible find nothing; ignored finds only what its
// breaking: ignore list accepts.
func TestRules(t *testing.T) {
	base := dirSnapshot(t, "base", "testdata/base")
	cases, err := os.ReadDir("testdata/cases")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		name := c.Name()
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata/cases", name)
			cur := dirSnapshot(t, name, dir)
			got, err := Compare(base, cur)
			if err != nil {
				t.Fatal(err)
			}
			text := render(got)
			wantFile := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(wantFile, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), text); d != "" {
				t.Errorf("findings differ from %s (-want +got; go test -update rewrites it):\n%s", wantFile, d)
			}
			s := Summarize(got)
			switch name {
			case "unchanged", "compatible":
				if len(got) != 0 {
					t.Errorf("want no finding, got:\n%s", text)
				}
				return
			case "ignored":
				if s.Failing != 0 || s.Ignored < 2 {
					t.Errorf("want every finding ignored (at least 2), got %+v:\n%s", s, text)
				}
				return
			}
			rule := RuleNamed(name)
			if rule == nil {
				t.Fatalf("case %s names no rule", name)
			}
			n := 0
			for _, f := range got {
				if f.Rule == name {
					n++
					if f.Category != rule.Category {
						t.Errorf("finding of %s has category %s, the rule %s", name, f.Category, rule.Category)
					}
					if f.Line <= 0 || f.File == "" {
						t.Errorf("finding without a place: %v", f)
					}
				}
			}
			if n == 0 {
				t.Errorf("case %s finds no %s:\n%s", name, name, text)
			}
			if rule.Severity == Error && s.Failing == 0 {
				t.Errorf("case %s: an error rule's finding fails nothing: %+v", name, s)
			}
		})
	}
	for _, r := range Rules {
		if !seen[r.Name] {
			t.Errorf("rule %s has no case in testdata/cases", r.Name)
		}
		if r.Doc == "" || r.check == nil {
			t.Errorf("rule %s lacks its doc or its check", r.Name)
		}
	}
}

// An ignore entry naming a rule that does not exist is an error at its line.
func TestIgnoreOfUnknownRule(t *testing.T) {
	base := dirSnapshot(t, "base", "testdata/base")
	src, err := os.ReadFile("testdata/base/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), "version: 1\n", "version: 1\nbreaking:\n  ignore:\n    - {rule: key-vanished, reason: typo}\n", 1)
	spec, err := keyspec.Parse("keyspec.yaml", []byte(edited))
	if err != nil {
		t.Fatal(err)
	}
	cur := *base
	cur.Spec = spec
	_, err = Compare(base, &cur)
	if err == nil || !strings.Contains(err.Error(), `keyspec.yaml:7: breaking ignore: rule "key-vanished": no such rule`) {
		t.Fatalf("err = %v", err)
	}
}

// docs/keyspec.md lists every rule with its category and severity.
func TestRulesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/keyspec.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Rules {
		row := "| `" + r.Name + "` | " + string(r.Category) + " | " + string(r.Severity) + " | "
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/keyspec.md lacks the row %q", row)
		}
	}
}

// The narrowing of lang's newer constructs, on the model directly: a path
// placeholder takes what a name does, an int64 argument every int, reply
// shapes chosen by an argument are compared shape by shape.
func TestNarrowingOfNewerForms(t *testing.T) {
	name := &keyspec.Param{Name: "p", Type: keyspec.TypeName, MaxLen: 32}
	path := &keyspec.Param{Name: "p", Type: keyspec.TypePath, MaxLen: 64}
	if d := paramNarrowed(name, path); d != "" {
		t.Errorf("name -> path: %q", d)
	}
	if d := paramNarrowed(path, name); d != "type path -> name" {
		t.Errorf("path -> name: %q", d)
	}
	short := &keyspec.Param{Name: "p", Type: keyspec.TypePath, MaxLen: 16}
	if d := paramNarrowed(path, short); d != "max_len 64 -> 16" {
		t.Errorf("path shorter: %q", d)
	}
	i := &keyspec.Arg{Name: "n", Type: keyspec.ArgInt, Min: 0, Max: 10}
	i64 := &keyspec.Arg{Name: "n", Type: keyspec.ArgInt64}
	if d := argNarrowed(i, i64); d != "" {
		t.Errorf("int -> int64: %q", d)
	}
	if d := argNarrowed(i64, i); d != "type int64 -> int" {
		t.Errorf("int64 -> int: %q", d)
	}
	mode := &keyspec.Arg{Name: "mode", Type: keyspec.ArgName}
	one := func(typ string) keyspec.Reply { return keyspec.Reply{Value: &keyspec.Field{Name: "v", Type: typ}} }
	shapes := func(s ...*keyspec.ReplyShape) keyspec.Reply { return keyspec.Reply{ByArg: mode, Shapes: s} }
	old := shapes(&keyspec.ReplyShape{Value: "count", Reply: one(keyspec.ReplyInt)}, &keyspec.ReplyShape{Value: "list", Reply: one(keyspec.ReplyStrings)})
	for _, c := range []struct {
		new  keyspec.Reply
		want string
	}{
		{shapes(&keyspec.ReplyShape{Value: "count", Reply: one(keyspec.ReplyInt)}, &keyspec.ReplyShape{Value: "list", Reply: one(keyspec.ReplyStrings)}, &keyspec.ReplyShape{Value: "sum", Reply: one(keyspec.ReplyInt)}), ""},
		{shapes(&keyspec.ReplyShape{Value: "count", Reply: one(keyspec.ReplyString)}, &keyspec.ReplyShape{Value: "list", Reply: one(keyspec.ReplyStrings)}), "shape count: type int -> string"},
		{shapes(&keyspec.ReplyShape{Value: "count", Reply: one(keyspec.ReplyInt)}), `shape list (mode="list") removed`},
		{one(keyspec.ReplyInt), "its shape is chosen by nothing (one shape), was by ARGV mode"},
	} {
		sc := func(r keyspec.Reply) *keyspec.Script { return &keyspec.Script{ID: "s", Name: "s", Reply: r} }
		c2 := &comparison{}
		r := &reporter{rule: RuleNamed("script-reply-changed"), c: c2}
		for _, p := range []scriptPair{{sc(old), sc(c.new)}} {
			scriptReplyChangedPair(p, r)
		}
		got := ""
		if len(r.found) > 0 {
			got = r.found[0].Msg
		}
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("want %q, got %q", c.want, got)
		}
	}
}

// A list whose elements are each one value (of) is compared by its element
// type: another of, or fields instead, is a change; an enum element that gains
// a value is one too; the same of is none.
func TestListOfElementsWidened(t *testing.T) {
	tone := &keyspec.Enum{Name: "tone", Values: []string{"warm"}}
	toneMore := &keyspec.Enum{Name: "tone", Values: []string{"warm", "cold"}}
	list := func(of string, e *keyspec.Enum, fields ...*keyspec.Field) *keyspec.Field {
		return &keyspec.Field{Name: "counts", Type: keyspec.ReplyList, Of: of, Enum: e, Fields: fields}
	}
	for _, c := range []struct {
		old, new *keyspec.Field
		want     string
	}{
		{list(keyspec.ReplyInt, nil), list(keyspec.ReplyInt, nil), ""},
		{list(keyspec.ReplyInt, nil), list(keyspec.ReplyString, nil), "elements: of int -> string"},
		{list(keyspec.ReplyInt, nil), list("", nil, &keyspec.Field{Name: "n", Type: keyspec.ReplyInt}), "elements: of int -> fields"},
		{list(keyspec.ReplyEnum, tone), list(keyspec.ReplyEnum, toneMore), "elements: enum tone gains cold"},
		{list(keyspec.ReplyEnum, toneMore), list(keyspec.ReplyEnum, tone), ""},
	} {
		if got := fieldWidened(c.old, c.new); got != c.want {
			t.Errorf("%s -> %s: %q, want %q", ofText(c.old), ofText(c.new), got, c.want)
		}
	}
}
