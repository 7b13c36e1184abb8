package codegen

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/gen/keyspec"
)

// fakeSHA1 stands for a script's SHA1: the model only names it.
const fakeSHA1 = "0123456789abcdef0123456789abcdef01234567"

// specFrom parses the spec at path after each old -> new edit, in order, each
// replacing the first occurrence left (each must apply).
func specFrom(t *testing.T, path string, edits ...string) *keyspec.Spec {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(text, edits[i]) {
			t.Fatalf("edit %q does not apply to %s", edits[i], path)
		}
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	spec, err := keyspec.Parse("keyspec.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func scriptsOf(spec *keyspec.Spec, in *keyspec.Instance) []Script {
	var out []Script
	for _, s := range spec.ScriptsOf(in) {
		out = append(out, Script{Spec: s, Source: "return 1", SHA1: fakeSHA1})
	}
	slices.SortFunc(out, func(a, b Script) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	return out
}

// buildModel builds the model of instance name of spec.
func buildModel(spec *keyspec.Spec, name string) (*pkgModel, error) {
	in := spec.Instance(name)
	return build(spec, in, scriptsOf(spec, in))
}

const small = "../testdata/small/keyspec.yaml"

func mustModel(t *testing.T, spec *keyspec.Spec, name string) *pkgModel {
	t.Helper()
	m, err := buildModel(spec, name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func scriptNamed(t *testing.T, m *pkgModel, name string) scriptDecl {
	t.Helper()
	for _, s := range m.Scripts.Scripts {
		if s.Spec == name {
			return s
		}
	}
	t.Fatalf("no script %s in the model", name)
	return scriptDecl{}
}

// KEYS positions that take the same key types (and no shared placeholder)
// share one key function, named after its first user and written once.
func TestKeyFunctionSharedBySignature(t *testing.T) {
	spec := specFrom(t, small, "scripts:\n", `scripts:
  tally:
    instance: a
    kind: cache
    cross_slot: test
    keys:
      - {name: first, one_of: [t_rate, t_item]}
      - {name: second, one_of: [t_rate, t_item]}
    reply: {type: int, name: n}
`)
	m := mustModel(t, spec, "a")
	tally, work := scriptNamed(t, m, "tally"), scriptNamed(t, m, "work")
	if len(tally.KeyFuncs) != 1 || tally.KeyFuncs[0].Name != "tallyFirstKey" {
		t.Fatalf("tally writes key functions %+v, want tallyFirstKey alone", tally.KeyFuncs)
	}
	f := tally.KeyFuncs[0]
	if tally.Input.Keys[0].Func != f || tally.Input.Keys[1].Func != f {
		t.Errorf("tally's two positions read through %s and %s, want both %s", tally.Input.Keys[0].Func.Name, tally.Input.Keys[1].Func.Name, f.Name)
	}
	if len(work.KeyFuncs) != 0 || work.Input.Keys[1].Func != f {
		t.Errorf("work writes %d key functions and reads bucket through %s, want none written and %s", len(work.KeyFuncs), work.Input.Keys[1].Func.Name, f.Name)
	}
	if got := []string{f.Cases[0].Type, f.Cases[1].Type}; !slices.Equal(got, []string{"TRateKey", "TItemKey"}) {
		t.Errorf("cases %v", got)
	}
	files, err := Instance(spec, spec.Instance("a"), scriptsOf(spec, spec.Instance("a")))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(files["scripts.go"]), "func tallyFirstKey("); n != 1 || strings.Contains(string(files["scripts.go"]), "func workBucketKey(") {
		t.Errorf("scripts.go declares tallyFirstKey %d times (or workBucketKey too)", n)
	}
}

// Positions of the same key types that differ in the shared placeholders they
// hold need their segments: they get functions of their own. The shared
// placeholder is checked between the interface's segment and the key type's.
func TestKeyFunctionsDifferBySharedPlaceholders(t *testing.T) {
	m := mustModel(t, specFrom(t, "../testdata/features/keyunion/keyspec.yaml"), "app")
	peek, take := scriptNamed(t, m, "quota_peek"), scriptNamed(t, m, "quota_take")
	if len(peek.KeyFuncs) != 1 || len(take.KeyFuncs) != 1 || peek.KeyFuncs[0] == take.KeyFuncs[0] {
		t.Fatalf("peek writes %v, take %v: want one each", peek.KeyFuncs, take.KeyFuncs)
	}
	f := take.KeyFuncs[0]
	want := &keyFunc{Name: "quotaTakeQuotaKey", Prefixed: true, Segments: 1, Cases: []keyCase{{"UserQuotaKey", []int{2}}, {"TeamQuotaKey", []int{3}}}}
	if diff := cmp.Diff(want, f, cmp.AllowUnexported(keyFunc{}), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Doc" }, cmp.Ignore())); diff != "" {
		t.Errorf("quota_take's key function (-want +got):\n%s", diff)
	}
	if got := take.Input.Keys[0].Into; !slices.Equal(got, []string{"quotaName", "quotaPrefix", "quotaAtUserID"}) {
		t.Errorf("the function returns into %v", got)
	}
	same := []sameCheck{{Placeholder: "user_id", A: operand{ID: "quotaName"}, ASeg: operand{ID: "quotaAtUserID"}, B: operand{ID: "audit", Field: "key"}, BSeg: operand{Int: 1}}}
	if diff := cmp.Diff(same, take.Input.Same, cmp.AllowUnexported(operand{})); diff != "" {
		t.Errorf("shared placeholder checks (-want +got):\n%s", diff)
	}
	if len(peek.Input.Same) != 0 {
		t.Errorf("quota_peek has no shared placeholder, yet checks %v", peek.Input.Same)
	}
}

// Each ARGV position is encoded by the runtime.Input method of its type with
// the spec's bounds; a ttl_of argument is the key's TTL constant and no field
// of Args.
func TestArgEncoders(t *testing.T) {
	work := scriptNamed(t, mustModel(t, specFrom(t, small), "a"), "work")
	want := map[string]argEncoder{
		"owner": {Kind: encodeChecked, Method: "Token"},
		"n":     {Kind: encodeChecked, Method: "Int", Bounds: []literal{intLit(-5), intLit(5)}},
		"flag":  {Kind: encodeFlag, Method: "Bool"},
		"note":  {Kind: encodeChecked, Method: "String", Bounds: []literal{intLit(10)}},
		"wait":  {Kind: encodeChecked, Method: "Duration", Bounds: []literal{durLit(time.Millisecond), durLit(time.Minute)}},
		"sum":   {Kind: encodeChecked, Method: "Hex", Bounds: []literal{intLit(8)}},
		"id":    {Kind: encodeChecked, Method: "UUID"},
		"label": {Kind: encodeChecked, Method: "Name", Bounds: []literal{intLit(8)}},
		"lease": {Kind: encodeConst, Method: "Millis", Const: "TLockTTL"},
	}
	if len(work.Input.Args) != len(want) {
		t.Fatalf("%d args, want %d", len(work.Input.Args), len(want))
	}
	for i, a := range work.Input.Args {
		if a.Index != i+1 {
			t.Errorf("%s is ARGV[%d], want %d", a.Spec, a.Index, i+1)
		}
		if diff := cmp.Diff(want[a.Spec], a.Encode, cmp.AllowUnexported(literal{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", a.Spec, diff)
		}
		if (a.Field == "") != (a.Spec == "lease") {
			t.Errorf("%s: field %q", a.Spec, a.Field)
		}
	}
	if n := len(work.Args.Fields); n != 8 || work.Input.NArgv != 9 {
		t.Errorf("WorkArgs has %d fields and the input %d ARGV, want 8 and 9", n, work.Input.NArgv)
	}
}

// Optional arguments use the Opt methods and pointer fields (bytes excepted),
// and their doc says what nil sends.
func TestOptionalArgs(t *testing.T) {
	m := mustModel(t, specFrom(t, "../testdata/features/optional/keyspec.yaml"), "app")
	var seen int
	for _, s := range m.Scripts.Scripts {
		for _, a := range s.Input.Args {
			if a.Field == "" || !strings.HasPrefix(a.Encode.Method, "Opt") {
				continue
			}
			seen++
			f := s.Args.Fields[slices.IndexFunc(s.Args.Fields, func(f structField) bool { return f.Name == a.Field })]
			if wantPtr := f.Type.Name != "byte"; f.Type.Ptr != wantPtr {
				t.Errorf("%s.%s: type %+v, want a pointer: %v", s.Spec, a.Spec, f.Type, wantPtr)
			}
			if !strings.Contains(strings.Join(f.Doc, " "), "nil sends an empty ARGV["+strconv.Itoa(a.Index)+"]") {
				t.Errorf("%s.%s: doc %q", s.Spec, a.Spec, f.Doc)
			}
		}
	}
	if seen == 0 {
		t.Fatal("the optional feature has no optional argument")
	}
}

// Reply fields are read by the reader of their type: nullable ones through
// runtime.Nullable, lists by their element's decoder; scripts sharing a
// type_name declare it once.
func TestReplyReaders(t *testing.T) {
	m := mustModel(t, specFrom(t, "../testdata/features/replies/keyspec.yaml"), "app")
	get, sections := scriptNamed(t, m, "doc_get"), scriptNamed(t, m, "doc_sections")
	want := []fieldRead{
		{"Title", reader{Kind: readNullable, Field: "title", Method: "String", Ref: true}},
		{"Rev", reader{Kind: readNullable, Field: "rev", Method: "Int", Ref: true}},
		{"Sections", reader{Kind: readList, Field: "sections", Width: 3, Decoder: "decodeSection", Ref: true}},
	}
	if diff := cmp.Diff(want, get.Decode.Fields); diff != "" {
		t.Errorf("doc_get's decoder (-want +got):\n%s", diff)
	}
	var elems []string
	for _, e := range get.Elems {
		elems = append(elems, e.Name)
	}
	if !slices.Equal(elems, []string{"SectionNotesItem", "Section"}) {
		t.Errorf("doc_get declares elements %v, want the nested one first", elems)
	}
	if notes := get.Elems[1].Reads[2].Read; notes.Ref || notes.Decoder != "decodeSectionNotesItem" {
		t.Errorf("Section reads notes with %+v", notes)
	}
	// An enum read only inside a list element still gets the labels its
	// decoder reads.
	var tone *enumDecl
	for i, e := range m.Keys.Enums {
		if e.Type == "Tone" {
			tone = &m.Keys.Enums[i]
		}
	}
	if tone == nil || tone.Strings == nil || tone.Strings.Var != "toneStrings" {
		t.Errorf("enum tone, read in a list element, has labels %+v", tone)
	}
	if len(sections.Elems) != 0 || sections.Result != nil {
		t.Errorf("doc_sections declares %v again", sections.Elems)
	}
	if r := sections.Wrapper.Result; !r.Slice || r.Name != "Section" {
		t.Errorf("doc_sections returns %+v, want []Section", r)
	}
}

// A list declared with of reads each element with the reader of its type
// (runtime.ListOf and a method expression; an enum through its labels), its Go
// type is a slice of the element's, and it declares no element type.
func TestListOfReaders(t *testing.T) {
	m := mustModel(t, specFrom(t, "../testdata/features/replies/keyspec.yaml"), "app")
	counts, fields := scriptNamed(t, m, "doc_counts"), scriptNamed(t, m, "doc_fields")
	if got, want := *counts.Decode.Value, (reader{Kind: readListOf, Field: "counts", Method: "Int", Ref: true}); got != want {
		t.Errorf("doc_counts reads %+v, want %+v", got, want)
	}
	if r := counts.Wrapper.Result; !r.Slice || r.Name != "int64" {
		t.Errorf("doc_counts returns %+v, want []int64", r)
	}
	want := []fieldRead{
		{"Groups", reader{Kind: readListOf, Field: "groups", Method: "Strings", Ref: true}},
		{"Tones", reader{Kind: readListOfEnum, Field: "tones", Enum: "Tone", Labels: "toneStrings", Ref: true}},
		{"Total", reader{Kind: readValue, Field: "total", Method: "Int", Ref: true}},
	}
	if diff := cmp.Diff(want, fields.Decode.Fields); diff != "" {
		t.Errorf("doc_fields's decoder (-want +got):\n%s", diff)
	}
	if len(fields.Elems) != 0 || len(counts.Elems) != 0 {
		t.Errorf("lists of values declare element types: %v %v", counts.Elems, fields.Elems)
	}
	var types []string
	for _, f := range fields.Result.Fields {
		types = append(types, f.Name+" "+goSource(f.Type))
	}
	if got := strings.Join(types, ", "); got != "Groups [][]string, Tones []Tone, Total int64" {
		t.Errorf("DocFieldsResult fields: %s", got)
	}
}

// goSource is t as Go source.
func goSource(t goType) string { return fmt.Sprintf("%#v", typeCode(t)) }
