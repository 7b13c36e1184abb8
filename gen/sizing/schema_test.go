package sizing

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hanchat/luagen/internal/schematest"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

const (
	schemaPath = "../../docs/sizing.schema.json"
	docPath    = "../../docs/sizing.md"
)

func compileSchema(t *testing.T) *jsonschema.Schema { return schematest.Compile(t, schemaPath) }

func yamlInstance(t *testing.T, src []byte) any { return schematest.Instance(t, src) }

// A cardinality file of every section is valid against the schema editors
// use, and the schema refuses an unknown field and a malformed size. (HAN's
// files are checked in tests/han/sizing.)
func TestSchemaAcceptsTheSampleFiles(t *testing.T) {
	s := compileSchema(t)
	for _, good := range []string{
		"version: 1\ninstance: app\nshard_maxmemory: 4gb\nkeys:\n  hits:\n    count: 1000\n    params: {page: home}\n    steps: [{script: hits_incr, args: {by: 1}}]\n",
		"version: 1\ninstance: app\nsamples: 50\nshard_maxmemory: 512mb\nfragmentation: 1.2\ngrowth: 1.1\nkeys:\n  hits:\n    rate: 20/s\n    lifetime: 1h\n    steps: [{script: hits_incr}]\nrates:\n  hits_incr:\n    rate: 100/s\n    branches:\n      - {name: first, share: 10%}\n      - {name: later, share: 90%}\n",
	} {
		if err := s.Validate(yamlInstance(t, []byte(good))); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{
		"version: 1\ninstance: app\nshard_maxmemory: 4gb\nkeys: {k: {steps: [{script: s}], colour: red}}\n",
		"version: 1\ninstance: app\nshard_maxmemory: four\nkeys: {}\n",
		"version: 1\ninstance: app\nshard_maxmemory: 4gb\nkeys: {k: {steps: [{script: s, args: {v: {bytes: 3}}}]}}\n",
	} {
		if err := s.Validate(yamlInstance(t, []byte(bad))); err == nil {
			t.Errorf("the schema accepts %q", bad)
		}
	}
}

var nodeType = reflect.TypeOf(yaml.Node{})

// The schema's properties and the parser's fields are the same set, both ways.
func TestSchemaMatchesTheParser(t *testing.T) {
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	var walk func(typ reflect.Type, node map[string]any, path string)
	walk = func(typ reflect.Type, node map[string]any, path string) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if ref, _ := node["$ref"].(string); ref != "" {
			node, _ = root["$defs"].(map[string]any)[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
		switch {
		case typ == nodeType:
			return // an argument's value: a scalar or {size: N}
		case typ.Kind() == reflect.Struct:
			props, _ := node["properties"].(map[string]any)
			fields := map[string]bool{}
			for i := 0; i < typ.NumField(); i++ {
				name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
				fields[name] = true
				sub, ok := props[name].(map[string]any)
				if !ok {
					t.Errorf("%s.%s: the parser accepts it, the schema does not", path, name)
					continue
				}
				walk(typ.Field(i).Type, sub, path+"."+name)
			}
			for name := range props {
				if !fields[name] {
					t.Errorf("%s.%s: the schema has it, the parser does not", path, name)
				}
			}
			if node["additionalProperties"] != false {
				t.Errorf("%s: the schema allows fields it does not list", path)
			}
		case typ.Kind() == reflect.Map:
			sub, _ := node["additionalProperties"].(map[string]any)
			walk(typ.Elem(), sub, path+".*")
		case typ.Kind() == reflect.Slice:
			sub, _ := node["items"].(map[string]any)
			walk(typ.Elem(), sub, path+"[]")
		}
	}
	walk(reflect.TypeOf(rawFile{}), root, "file")
}

// Every field the parser accepts is documented in docs/sizing.md (as `name`).
func TestEveryFieldIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var collect func(reflect.Type)
	collect = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == nodeType {
			return
		}
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			names[name] = true
			collect(typ.Field(i).Type)
		}
	}
	collect(reflect.TypeOf(rawFile{}))
	names["size"] = true
	var missing []string
	for n := range names {
		if !bytes.Contains(doc, []byte("`"+n+"`")) {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("docs/sizing.md does not document %v", missing)
	}
}
