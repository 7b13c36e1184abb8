package alerts_test

import (
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/internal/promtest"
)

// fixture is the tool's own small spec (HAN's is checked in tests/han/alerts).
func fixture(t testing.TB) *keyspec.Spec {
	t.Helper()
	spec, err := keyspec.Load("../testdata/small/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The rules of every instance pass promtool check rules, and their generated
// unit tests pass promtool test rules (promtest.CheckRules).
func TestPromtoolChecksAndTestsTheRules(t *testing.T) {
	promtest.CheckRules(t, fixture(t), 20)
}
