package alerts_test

import (
	"cmp"
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/alerts"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/internal/specedit"
)

// Every alert carries its source (a spec file and line), a severity and a
// runbook that links its section, which exists: luagen's own rules in
// docs/operations.md, the ones keyspec.yaml declares (alerts:) in HAN's and
// Elang's pages.
func TestEveryAlertHasSourceRunbookAndDocs(t *testing.T) {
	spec := hanSpec(t)
	page := map[string]string{}
	for _, a := range spec.Alerts {
		page[a.Name] = "docs/elang-outbox.md"
		if strings.HasPrefix(a.Name, "HAN") {
			page[a.Name] = "docs/han.md"
		}
	}
	if len(page) != 6 {
		t.Fatalf("keyspec.yaml declares %d alerts, want 6", len(page))
	}
	docs := map[string]string{}
	for _, p := range []string{"docs/operations.md", "docs/han.md", "docs/elang-outbox.md"} {
		b, err := os.ReadFile("../../../" + p)
		if err != nil {
			t.Fatal(err)
		}
		docs[p] = string(b)
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
				p := cmp.Or(page[r.Alert], "docs/operations.md")
				if !strings.Contains(r.Annotations["runbook"], p+"#"+strings.ToLower(r.Alert)) || r.Annotations["summary"] == "" {
					t.Errorf("%s %s: annotations %v", in.Name, r.Alert, r.Annotations)
				}
				if !strings.Contains(docs[p], "\n### "+r.Alert+"\n") {
					t.Errorf("%s has no section ### %s", p, r.Alert)
				}
			}
		}
	}
}

func alertNames(f *alerts.File) map[string]int {
	out := map[string]int{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out[r.Alert]++
			}
		}
	}
	return out
}

// What the spec says decides the rules: a noeviction instance alerts on any
// eviction, an evicting one warns; keys without expiry are checked per
// database with the durable one-name keys allowed (Elang's outbox:stream),
// one error-rate rule per declared code; the budget comes from maxmemory,
// else the sizing report, else the declared default with a note.
func TestRulesFollowTheSpec(t *testing.T) {
	spec := hanSpec(t)
	vm1, _, err := alerts.Rules(spec, spec.Instance("vm1"), alerts.Options{SizingMaxmemoryBytes: 5762 << 20, SizingSource: "vm1.sizing.json"})
	if err != nil {
		t.Fatal(err)
	}
	elang, notes, err := alerts.Rules(spec, spec.Instance("elang"), alerts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n1, ne := alertNames(vm1), alertNames(elang)
	if n1["RedisEvicting"] != 1 || n1["RedisEvictionOnNoeviction"] != 0 || ne["RedisEvictionOnNoeviction"] != 1 || ne["RedisEvicting"] != 0 {
		t.Errorf("eviction rules: vm1 %v, elang %v", n1, ne)
	}
	if n1["RedisKeysWithoutExpiry"] != 3 || ne["RedisKeysWithoutExpiry"] != 1 {
		t.Errorf("keys without expiry: vm1 %d (3 databases), elang %d", n1["RedisKeysWithoutExpiry"], ne["RedisKeysWithoutExpiry"])
	}
	declared := 0
	for _, s := range spec.ScriptsOf(spec.Instance("vm1")) {
		declared += len(s.Errors)
	}
	if n1["LuagenScriptErrorRate"] != declared || n1["HANRealtimeSubscribersGone"] != 1 || ne["ElangOutboxBacklog"] != 1 {
		t.Errorf("vm1: %d error-rate rules for %d declared codes; %v; elang %v", n1["LuagenScriptErrorRate"], declared, n1, ne)
	}
	for _, g := range elang.Groups {
		for _, r := range g.Rules {
			if r.Alert == "RedisKeysWithoutExpiry" && !strings.HasSuffix(r.Expr, "> 1") {
				t.Errorf("elang allows its one durable key, outbox:stream: %s", r.Expr)
			}
			if r.Alert == "RedisMemoryHigh" && !strings.Contains(r.Expr, "1073741824") {
				t.Errorf("elang's budget without maxmemory or report is the declared default: %s", r.Expr)
			}
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0].String(), "keyspec.yaml:") || !strings.Contains(notes[0].Msg, "declared default 1gb") {
		t.Errorf("notes: %v", notes)
	}
	for _, g := range vm1.Groups {
		for _, r := range g.Rules {
			if r.Alert == "RedisMemoryHigh" && (!strings.Contains(r.Expr, "6041894912") || !strings.Contains(r.Labels["source"], "vm1.sizing.json")) {
				t.Errorf("vm1's budget is the sizing report's: %s %v", r.Expr, r.Labels)
			}
		}
	}
	withMax, notes, _ := alerts.Rules(spec, spec.Instance("vm1"), alerts.Options{MaxmemoryBytes: 1 << 30})
	if len(notes) != 0 || !strings.Contains(withMax.Groups[0].Rules[1].Labels["source"], "--maxmemory") {
		t.Errorf("with --maxmemory: notes %v, %v", notes, withMax.Groups[0].Rules[1].Labels)
	}
	if _, _, err := alerts.Rules(spec, spec.Instance("vm1"), alerts.Options{Server: "nope"}); err == nil {
		t.Error("an unknown server is accepted")
	}
}

// A split instance gets rules per server, each selecting its server's
// targets and placing each database (and the alerts the spec declares about
// its entries) on its own server.
func TestRulesOfASplitInstance(t *testing.T) {
	src, err := os.ReadFile("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	split, err := specedit.MoveDB(src, specedit.HANRealtime)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := keyspec.Parse("keyspec.yaml", split)
	if err != nil {
		t.Fatal(err)
	}
	in := spec.Instance("vm1")
	own, _, err := alerts.Rules(spec, in, alerts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, _, err := alerts.Rules(spec, in, alerts.Options{Server: "realtime"})
	if err != nil {
		t.Fatal(err)
	}
	if no, nr := alertNames(own)["RedisKeysWithoutExpiry"], alertNames(rt)["RedisKeysWithoutExpiry"]; no+nr != 3 || nr != 1 {
		t.Errorf("keys rules: own %d, realtime %d", no, nr)
	}
	// HAN's own alert about the realtime channels (keyspec.yaml's alerts:)
	// follows rt_dialog onto the realtime server.
	if no, nr := alertNames(own)["HANRealtimeSubscribersGone"], alertNames(rt)["HANRealtimeSubscribersGone"]; no != 0 || nr != 1 {
		t.Errorf("HANRealtimeSubscribersGone: own %d, realtime %d", no, nr)
	}
	for _, g := range rt.Groups {
		for _, r := range g.Rules {
			if strings.Contains(r.Expr, "redis_") && !strings.Contains(r.Expr, `luagen_server="realtime"`) {
				t.Errorf("%s: %s does not select the realtime server", r.Alert, r.Expr)
			}
		}
	}
}
