package alerts_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/alerts"
)

// Every alert carries its source (a spec file and line), a severity and a
// runbook that links its section in docs/operations.md, which exists; every
// derived alert's name starts with Redis or Luagen, the prefixes the spec may
// not give an alert of its own (alerts:).
func TestEveryAlertHasSourceRunbookAndDocs(t *testing.T) {
	spec := fixture(t)
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range spec.Instances {
		f, _, err := alerts.Rules(spec, in, alerts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				if !strings.HasPrefix(r.Labels["source"], "keyspec.yaml:") || r.Labels["severity"] == "" || r.Labels["luagen_instance"] != in.Name {
					t.Errorf("%s %s: labels %v", in.Name, r.Alert, r.Labels)
				}
				if !strings.Contains(r.Annotations["runbook"], "docs/operations.md#"+strings.ToLower(r.Alert)) || r.Annotations["summary"] == "" {
					t.Errorf("%s %s: annotations %v", in.Name, r.Alert, r.Annotations)
				}
				if !strings.HasPrefix(r.Alert, "Redis") && !strings.HasPrefix(r.Alert, "Luagen") {
					t.Errorf("%s: a derived alert's name starts with Redis or Luagen (keyspec refuses them in alerts:)", r.Alert)
				}
				if !strings.Contains(string(doc), "\n### "+r.Alert+"\n") {
					t.Errorf("docs/operations.md has no section ### %s", r.Alert)
				}
			}
		}
	}
}
