package keyspec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hanchat/luagen/internal/schematest"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const (
	schemaPath = "../../docs/keyspec.schema.json"
	docPath    = "../../docs/keyspec.md"
)

// specsInRepo are every spec of the tool meant to parse: luagen init's, the
// generator's and the linter's fixtures (but those whose mistake is in the spec
// itself). HAN's and the examples' are checked in tests/han/keyspec.
func specsInRepo(t *testing.T) []string {
	t.Helper()
	out := []string{"../../cmd/luagen/template/keyspec.yaml", "../../cmd/luagen/template/durable/keyspec.yaml", "testdata/valid.yaml", "testdata/alerts.yaml"}
	for _, glob := range []string{"../testdata/*/keyspec.yaml", "../alerts/testdata/*/keyspec.yaml", "../testdata/features/*/keyspec.yaml", "../lint/testdata/*/keyspec.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if want, err := os.ReadFile(filepath.Join(filepath.Dir(f), "want.txt")); err == nil && bytes.Contains(want, []byte(": spec: ")) {
				continue
			}
			out = append(out, f)
		}
	}
	return out
}

func compileSchema(t *testing.T) *jsonschema.Schema { return schematest.Compile(t, schemaPath) }

func yamlInstance(t *testing.T, src []byte) any { return schematest.Instance(t, src) }

// Every spec of the tool that parses is valid against the schema editors
// use, and the schema is not vacuous: it refuses an unknown field, an unknown
// value type and a TTL rule that does not exist.
func TestSchemaAcceptsEverySpecInTheRepository(t *testing.T) {
	schema := compileSchema(t)
	specs := specsInRepo(t)
	if len(specs) < 25 {
		t.Fatalf("only %d specs found", len(specs))
	}
	for _, f := range specs {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("keyspec.yaml", src); err != nil {
			t.Errorf("%s does not parse: %v", f, err)
			continue
		}
		if err := schema.Validate(yamlInstance(t, src)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	valid, _ := os.ReadFile("testdata/valid.yaml")
	for _, bad := range []struct{ old, new string }{
		{"    kind: cache\n", "    kind: cache\n    colour: red\n"},
		{"value: [string]", "value: [float]"},
		{"ttl: {rule: fixed, value: 1h}", "ttl: {rule: sometimes, value: 1h}"},
		{"    ttl: {rule: fixed, value: 1h}\n", "\n"}, // a key holding a value has a TTL rule (a prefix key has none)
	} {
		edited := strings.Replace(string(valid), bad.old, bad.new, 1)
		if edited == string(valid) {
			t.Fatalf("testdata/valid.yaml no longer has %q", bad.old)
		}
		if err := schema.Validate(yamlInstance(t, []byte(edited))); err == nil {
			t.Errorf("the schema accepts %q", bad.new)
		}
	}
}

// The schema's properties and the parser's fields are the same set, object by
// object, both ways: a field the parser accepts that the schema lacks (or the
// reverse) fails here.
func TestSchemaMatchesTheParser(t *testing.T) {
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	w := schemaWalk{t: t, root: root, seen: map[string]bool{}}
	w.walk(reflect.TypeOf(rawSpec{}), root, "spec")
}

type schemaWalk struct {
	t    *testing.T
	root map[string]any
	seen map[string]bool
}

func (w *schemaWalk) resolve(node map[string]any) (map[string]any, string) {
	ref, _ := node["$ref"].(string)
	if ref == "" {
		return node, ""
	}
	name := strings.TrimPrefix(ref, "#/$defs/")
	def, _ := w.root["$defs"].(map[string]any)[name].(map[string]any)
	if def == nil {
		w.t.Fatalf("dangling %s", ref)
	}
	return def, name
}

func (w *schemaWalk) walk(typ reflect.Type, node map[string]any, path string) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	node, def := w.resolve(node)
	switch typ.Kind() {
	case reflect.Struct:
		key := typ.Name() + "@" + def
		if def != "" && w.seen[key] {
			return
		}
		w.seen[key] = true
		props, _ := node["properties"].(map[string]any)
		if props == nil {
			w.t.Errorf("%s: the schema has no properties for %s", path, typ.Name())
			return
		}
		fields := map[string]bool{}
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			fields[name] = true
			sub, ok := props[name].(map[string]any)
			if !ok {
				w.t.Errorf("%s.%s: the parser accepts it, the schema does not", path, name)
				continue
			}
			w.walk(f.Type, sub, path+"."+name)
		}
		for name := range props {
			if !fields[name] {
				w.t.Errorf("%s.%s: the schema has it, the parser does not", path, name)
			}
		}
		if node["additionalProperties"] != false {
			w.t.Errorf("%s: the schema allows fields it does not list; the parser refuses them", path)
		}
	case reflect.Map:
		sub, ok := node["additionalProperties"].(map[string]any)
		if !ok {
			w.t.Errorf("%s: a map in the parser, not in the schema", path)
			return
		}
		w.walk(typ.Elem(), sub, path+".*")
	case reflect.Slice:
		sub, ok := node["items"].(map[string]any)
		if !ok {
			w.t.Errorf("%s: a list in the parser, not in the schema", path)
			return
		}
		w.walk(typ.Elem(), sub, path+"[]")
	}
}

// Every field the parser accepts is documented in docs/keyspec.md (as `name`).
func TestEveryFieldIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var collect func(reflect.Type)
	seen := map[reflect.Type]bool{}
	collect = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			names[name] = true
			collect(typ.Field(i).Type)
		}
	}
	collect(reflect.TypeOf(rawSpec{}))
	var missing []string
	for n := range names {
		if !bytes.Contains(doc, []byte("`"+n+"`")) {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("docs/keyspec.md does not document %v", missing)
	}
	for _, v := range []string{ValueString, ValueCounter, ValueHash, ValueList, ValueSet, ValueZSet, ValueStream, ValueMsgpack, ValueJSON,
		TTLFixed, TTLWindowJitter, TTLHeartbeat, TTLClamped, TTLNone, ShapeGetIncrement, ReplyList} {
		if !bytes.Contains(doc, []byte("`"+v+"`")) {
			t.Errorf("docs/keyspec.md does not document %q", v)
		}
	}
}
