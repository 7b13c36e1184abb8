package tests

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/services/vm1/legacystub"
)

// With the stub marked cut_over in keyspec.yaml, generated code keeps nothing of
// it: no key, script, URL or ACL prefix; exactly the two stub scripts leave.
func TestLegacyStubCutOverSpecGeneratesNothingOfTheStub(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("state: alive")) {
		t.Fatal("keyspec.yaml does not mark the stub alive; this test flips that mark")
	}
	spec, err := keyspec.Parse("keyspec.yaml", bytes.Replace(src, []byte("state: alive"), []byte("state: cut_over"), 1))
	if err != nil {
		t.Fatal(err)
	}
	files, err := gen.Generate(spec, os.DirFS("../lua"), gen.Options{Instances: []string{"vm1"}})
	if err != nil {
		t.Fatal(err)
	}
	stub := regexp.MustCompile(`han:legacy:|SAFETY_STUB_REDIS_URL|StubTask|stub_task|LegacySafetyTask|DB2`)
	var all []byte
	for _, p := range files.Paths() {
		if m := stub.Find(files[p]); m != nil {
			t.Errorf("after the cutover %s still names %q", p, m)
		}
		all = append(all, files[p]...)
	}
	// Every other script is still generated.
	for _, s := range vm1.AllScripts() {
		gone := !bytes.Contains(all, []byte(`"`+s.Name()+`"`))
		if isStub := strings.HasPrefix(s.Name(), "stub_task_"); gone != isStub {
			t.Errorf("script %s: gone after the cutover = %v", s.Name(), gone)
		}
	}
	// The live generation still has them (the test can tell the difference).
	if !slices.Contains(vm1.APIBackendKeyPatterns, legacystub.Namespace) {
		t.Fatalf("the live ACL patterns %v lack %s", vm1.APIBackendKeyPatterns, legacystub.Namespace)
	}
}
