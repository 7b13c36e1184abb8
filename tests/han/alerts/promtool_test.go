package alerts_test

import (
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/internal/promtest"
)

func hanSpec(t testing.TB) *keyspec.Spec {
	t.Helper()
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The rules of every instance pass promtool check rules, and their generated
// unit tests pass promtool test rules (promtest.CheckRules).
func TestPromtoolChecksAndTestsTheRules(t *testing.T) {
	promtest.CheckRules(t, hanSpec(t), 20)
}
