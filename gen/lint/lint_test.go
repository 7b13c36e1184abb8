package lint_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/lint"
)

var update = flag.Bool("update", false, "rewrite testdata/*/want.txt")

func findings(t *testing.T, specPath, luaDir string, src []byte) string {
	t.Helper()
	if src == nil {
		var err error
		if src, err = os.ReadFile(specPath); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	for _, f := range lint.Run("keyspec.yaml", src, os.DirFS(luaDir), "lua") {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

// Each testdata directory is a spec and its Lua with one deliberate mistake (or
// none: clean); want.txt is the exact lint output, reviewed in the diff.
func TestFixtures(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/*")
	if len(dirs) < 10 {
		t.Fatalf("only %d fixtures", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := findings(t, filepath.Join(dir, "keyspec.yaml"), filepath.Join(dir, "lua"), nil)
			wantPath := filepath.Join(dir, "want.txt")
			if *update {
				os.WriteFile(wantPath, []byte(got), 0o644)
			}
			want, _ := os.ReadFile(wantPath)
			if got != string(want) {
				t.Errorf("lint output:\n%s\nwant:\n%s", got, want)
			}
			if filepath.Base(dir) == "clean" && got != "" {
				t.Error("the clean fixture has findings")
			} else if filepath.Base(dir) != "clean" && got == "" {
				t.Error("a fixture with a mistake has no finding")
			}
		})
	}
}

// The HAN spec settles DESIGN.md's four contradictions; undoing any settlement
// makes the linter find it again.
func TestHANSpecSettlesTheContradictions(t *testing.T) {
	src, err := os.ReadFile("../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := findings(t, "", "../../lua", src); got != "" {
		t.Fatalf("the HAN spec has lint findings:\n%s", got)
	}
	for name, tc := range map[string]struct{ old, new, want string }{
		"1 settings prefix": {
			`      - {prefix: "han:settings:snapshot:", reason: "seed 000 §6 keeps settings snapshots in DB1, used by api_backend; §2 forgot the prefix"}` + "\n", "",
			`spec: key "settings_snapshot": pattern "han:settings:snapshot:{version}" is outside every prefix of its owner api_backend`},
		"2 SELECT": {
			`select: {allow: true, reason: "REDIS_REALTIME_URL=/1 needs SELECT 1 at connect; scripts and code never SELECT"}`,
			`select: {allow: false, reason: "seed 000 §2: SELECT is forbidden"}`,
			`select: db vm1.db1 (REDIS_REALTIME_URL) has index 1: a client must SELECT 1 to reach it, but user api_backend may not SELECT`},
		"3 cross-slot heartbeat": {
			`    cross_slot: "connection hash and user's ZSET (CONTRADICTION 3); VM1 is standalone"` + "\n    doc: Refreshes", "    doc: Refreshes",
			`cross-slot: script "rt_heartbeat" takes 2 KEYS (conn, user_connections) in different hash slots`},
		"3 cluster": {
			"    # until their keys share a hash tag.\n    topology: standalone", "    # until their keys share a hash tag.\n    topology: cluster",
			`cross-slot: script "rt_heartbeat" takes 2 KEYS (conn, user_connections) on cluster instance vm1`},
		"4 legacy prefix": {
			`      - {prefix: "han:legacy:", reason: "seed 000 §7 stub task state in DB2 until cutover", legacy_db: db2}` + "\n", "",
			`spec: key "legacy_safety_task": pattern "han:legacy:safety-task:{task_id}" is outside every prefix of its owner api_backend`},
		"stub TTL within budget": {
			"    fields: [state, polls]\n    ttl: {rule: fixed, value: 30m}", "    fields: [state, polls]\n    ttl: {rule: fixed, value: 20m}",
			`legacy-budget: key "legacy_safety_task" expires after 20m0s, within the poll/recovery budget 20m0s of vm1.db2`},
		"poll script on vm2": {
			"  stub_task_poll:\n", "  safety_poll:\n    instance: vm2\n    kind: task_poll\n    keys: [{name: e, one_of: [safety_text]}]\n    reply: {type: int, name: n}\n  stub_task_poll:\n",
			`forbidden-kind: script "safety_poll" is a task_poll script, which vm2 forbids`},
	} {
		t.Run(name, func(t *testing.T) {
			if !bytes.Contains(src, []byte(tc.old)) {
				t.Fatalf("the spec no longer contains the settlement this test undoes:\n%s", tc.old)
			}
			got := findings(t, "", "../../lua", bytes.Replace(src, []byte(tc.old), []byte(tc.new), 1))
			if !strings.Contains(got, tc.want) {
				t.Errorf("lint output:\n%s\nwant a line containing:\n%s", got, tc.want)
			}
		})
	}
}
