package promtest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/dashboards"
	"github.com/hanchat/luagen/gen/keyspec"
)

// CheckDashboards builds the dashboard of every instance of spec and checks
// it follows the spec: a stable uid, unique panel ids, a row for the server,
// one per live database, one per script and the users' denials, every Redis
// query selecting its instance, the same bytes when built twice; and an
// unknown server of instance in is refused.
func CheckDashboards(t *testing.T, spec *keyspec.Spec, in string) {
	t.Helper()
	for _, in := range spec.Instances {
		d, err := dashboards.Build(spec, in, dashboards.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.UID != "luagen-"+in.Name {
			t.Errorf("uid %q", d.UID)
		}
		ids := map[int]bool{}
		rows := map[string]bool{}
		for _, p := range d.Panels {
			if ids[p.ID] {
				t.Errorf("%s: panel id %d twice", in.Name, p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				rows[p.Title] = true
			}
			for _, q := range p.Targets {
				if strings.Contains(q.Expr, "redis_") && !strings.Contains(q.Expr, `luagen_instance="`+in.Name+`"`) {
					t.Errorf("%s: %s does not select the instance", in.Name, q.Expr)
				}
			}
		}
		want := 2 + len(in.LiveDBs()) + len(spec.ScriptsOf(in))
		if len(rows) != want {
			t.Errorf("%s: %d rows, want %d (server, databases, scripts, users)", in.Name, len(rows), want)
		}
		for _, s := range spec.ScriptsOf(in) {
			if !rows["Script "+s.Name] {
				t.Errorf("%s: no row for script %s", in.Name, s.Name)
			}
		}
		a, _ := d.JSON()
		d2, _ := dashboards.Build(spec, in, dashboards.Options{})
		b, _ := d2.JSON()
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two builds differ", in.Name)
		}
	}
	if _, err := dashboards.Build(spec, spec.Instance(in), dashboards.Options{Server: "nope"}); err == nil {
		t.Error("an unknown server is accepted")
	}
}
