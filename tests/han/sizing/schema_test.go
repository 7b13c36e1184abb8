package sizing_test

import (
	"os"
	"testing"

	"github.com/hanchat/luagen/internal/schematest"
)

// HAN's and Elang's cardinality files are valid against the schema editors use.
func TestHANFilesMatchTheSchema(t *testing.T) {
	s := schematest.Compile(t, "../../../docs/sizing.schema.json")
	for _, f := range []string{"../../../sizing/vm1.yaml", "../../../sizing/vm2.yaml", "../../../sizing/elang.yaml"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(schematest.Instance(t, src)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
