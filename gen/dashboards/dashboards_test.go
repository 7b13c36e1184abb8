package dashboards_test

import (
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/internal/promtest"
)

// A dashboard per instance follows the spec (promtest.CheckDashboards).
func TestDashboardRowsFollowTheSpec(t *testing.T) {
	spec, err := keyspec.Load("../testdata/small/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	promtest.CheckDashboards(t, spec, "a")
}
