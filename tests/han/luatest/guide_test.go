package luatestguide_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every Go block of docs/luatest.md is code that compiles and, where it has an
// Output comment, runs: an example function of luatest's or this package's
// guide_example_test.go, or the
// body of the test luagen init writes (which cmd/luagen's tests compile and
// run in a new module).
func TestGuideBlocksAreExamples(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/luatest.md")
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, p := range []string{"guide_example_test.go", "../../../luatest/guide_example_test.go", "../../../cmd/luagen/template/hits_test.go.tmpl"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, string(b))
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 6 {
		t.Fatalf("docs/luatest.md has %d Go blocks, want at least 6 (one per question it answers)", len(blocks))
	}
	for _, b := range blocks {
		found := false
		for _, s := range sources {
			if strings.Contains(s, b[1]) {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/luatest.md block is in no example (copy it from guide_example_test.go):\n%s", b[1])
		}
	}
}
