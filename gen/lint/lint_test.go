package lint_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
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
	for name, tc := range map[string]struct {
		old, new, want string
		lua            map[string]string // Lua files added to a copy of lua/
	}{
		"1 settings prefix": {
			`      - {prefix: "han:settings:snapshot:", reason: "HAN VM1 spec §6 keeps settings snapshots in DB1, used by api_backend; §2 forgot the prefix"}` + "\n", "",
			`spec: key "settings_snapshot": pattern "han:settings:snapshot:{version}" is outside every prefix of its owner api_backend`, nil},
		"2 SELECT": {
			`select: {allow: true, reason: "REDIS_REALTIME_URL=/1 needs SELECT 1 at connect; scripts and code never SELECT"}`,
			`select: {allow: false, reason: "HAN VM1 spec §2: SELECT is forbidden"}`,
			`select: db vm1.db1 (REDIS_REALTIME_URL) has index 1: a client must SELECT 1 to reach it, but user api_backend may not SELECT`, nil},
		"3 cross-slot heartbeat": {
			`    cross_slot: "connection hash and user's ZSET (CONTRADICTION 3); VM1 is standalone"` + "\n    doc: Refreshes", "    doc: Refreshes",
			`cross-slot: script "rt_heartbeat" takes 2 KEYS (conn, user_connections) that may be in different hash slots`, nil},
		"3 cluster": {
			"    # until their keys share a hash tag.\n    topology: standalone", "    # until their keys share a hash tag.\n    topology: cluster",
			`spec: script "idem_complete": on cluster instance vm1 its 2 KEYS can land in different hash slots (CROSSSLOT)`, nil},
		"4 legacy prefix": {
			`      - {prefix: "han:legacy:", reason: "HAN VM1 spec §7 stub task state in DB2 until cutover", legacy_db: db2}` + "\n", "",
			`spec: key "legacy_safety_task": pattern "han:legacy:safety-task:{task_id}" is outside every prefix of its owner api_backend`, nil},
		"stub TTL within budget": {
			"    ttl: {rule: fixed, value: 30m, exceeds: 20m}", "    ttl: {rule: fixed, value: 20m, exceeds: 20m}",
			`ttl-bound: key "legacy_safety_task": ttl value 20m0s does not exceed its declared floor 20m0s`, nil},
		"JWKS marker raised to 300 days": {
			"    ttl: {rule: fixed, value: 30s, max: 30s}", "    ttl: {rule: fixed, value: 300d, max: 30s}",
			`ttl-bound: key "api_jwks_negative": ttl value 7200h0m0s is above its declared max 30s (source: HAN VM1 spec §3)`, nil},
		"a stream key on vm2": {
			"  safety_dns:\n", "  safety_events:\n    db: vm2.db0\n    pattern: \"han:safety:events\"\n    value: [stream]\n    max_len: 100\n    ttl: {rule: none, reason: bounded}\n  safety_dns:\n",
			`forbidden-value: key "safety_events" may hold a stream, which vm2 forbids (HAN VM2 spec §1: PostgreSQL is the only queue; no Redis stream)`, nil},
		"poll script on vm2": {
			"  stub_task_poll:\n", "  safety_poll:\n    instance: vm2\n    kind: task_poll\n    keys: [{name: e, one_of: [safety_text]}]\n    reply: {type: int, name: n}\n  stub_task_poll:\n",
			`forbidden-kind: script "safety_poll" is of kind task_poll, which vm2 forbids`, nil},
		"a get+increment script on vm2": {
			"  cache_get:\n", "  cache_count:\n    instance: vm2\n    kind: cache\n    keys: [{name: e, one_of: [safety_text]}]\n    reply: {type: int, name: n}\n  cache_get:\n",
			`lua/vm2/cache_count.lua:2: forbidden-shape: script "cache_count" reads and increments the same key, a get+increment shape, which vm2 forbids except in scripts of kind rate_limit`,
			map[string]string{"vm2/cache_count.lua": "local n = redis.call('HGET', KEYS[1], 'n')\nredis.call('HINCRBY', KEYS[1], 'n', 1)\nreturn 1\n"}},
		// Issue 16 (HAN VM1 spec §5): Redis Streams are not a business queue.
		"a vm1 script XADDing to a declared key": {
			"  rt_cleanup:\n", "  rt_announce:\n    instance: vm1\n    kind: presence\n    keys: [{name: conn, one_of: [rt_conn]}]\n    reply: {type: string, name: id}\n  rt_cleanup:\n",
			`lua/vm1/rt_announce.lua:1: forbidden-command: XADD, which vm1 forbids (HAN VM1 spec §5: Redis Streams are not a business queue)`,
			map[string]string{"vm1/rt_announce.lua": "local id = redis.call('XADD', KEYS[1], 'MAXLEN', 100, '*', 'e', 'joined')\nredis.call('PEXPIRE', KEYS[1], 90000)\nreturn id\n"}},
	} {
		t.Run(name, func(t *testing.T) {
			if !bytes.Contains(src, []byte(tc.old)) {
				t.Fatalf("the spec no longer contains the settlement this test undoes:\n%s", tc.old)
			}
			luaDir := "../../lua"
			if tc.lua != nil {
				luaDir = copyLua(t, luaDir, tc.lua)
			}
			got := findings(t, "", luaDir, bytes.Replace(src, []byte(tc.old), []byte(tc.new), 1))
			if !strings.Contains(got, tc.want) {
				t.Errorf("lint output:\n%s\nwant a line containing:\n%s", got, tc.want)
			}
		})
	}
}

// copyLua copies the Lua directory into a temporary one and adds files to it.
func copyLua(t *testing.T, dir string, add map[string]string) string {
	t.Helper()
	out := t.TempDir()
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	for name, src := range add {
		if err := os.WriteFile(filepath.Join(out, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// luagen lint reports each of the compiler's bypass fixtures
// (gen/compiler/testdata/bypass) under the rule that names it.
func TestBypassesHaveTheirRule(t *testing.T) {
	const dir = "../compiler/testdata/bypass"
	spec, err := os.ReadFile(filepath.Join(dir, "keyspec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]string{
		"alias_reassigned_in_closure": lint.RuleScriptKey, "alias_reassigned_in_loop": lint.RuleScriptKey,
		"allow_oom": lint.RuleShebang, "arity": lint.RuleArity, "assign_redis_call": lint.RuleShadow,
		"client_list": lint.RuleNoScript, "copy_argv_key": lint.RuleCrossDB, "copy_db": lint.RuleCrossDB,
		"dbsize": lint.RuleKeyless, "del_argv_key": lint.RuleScriptKey, "del_literal_key": lint.RuleScriptKey,
		"del_unpack": lint.RuleScriptKey, "dynamic_command": lint.RuleDynamicCmd, "dynamic_subcommand": lint.RuleDynamicCmd,
		"evalsha": lint.RuleNoScript, "flushall": lint.RuleDangerous, "info": lint.RuleDangerous,
		"keys_aliased_table": lint.RuleKeysReadOnly, "keys_assign": lint.RuleKeysReadOnly, "keys_command": lint.RuleDangerous,
		"keys_global_assign": lint.RuleShadow, "keys_table_insert": lint.RuleKeysReadOnly, "local_named_keys": lint.RuleShadow,
		"move": lint.RuleCrossDB, "mset_argv_key": lint.RuleScriptKey, "param_named_redis": lint.RuleShadow,
		"pcall_script_flush": lint.RuleNoScript, "rename_argv_key": lint.RuleScriptKey,
		"scan": lint.RuleKeyless, "select": lint.RuleScriptSelect, "set_repl": lint.RuleReplication,
		"sort_store": lint.RuleDangerous, "swapdb": lint.RuleCrossDB, "unknown_command": lint.RuleUnknownCmd,
		"unknown_subcommand": lint.RuleUnknownCmd, "unlink_argv_key": lint.RuleScriptKey,
		"xread_keyword_argv": lint.RuleScriptKey, "zunionstore_numkeys_argv": lint.RuleScriptKey,
		// Aimed at the dataflow reading.
		"alias_reassigned_in_branch": lint.RuleScriptKey, "argv_rewritten": lint.RuleArgvReadOnly,
		"call_through_error": lint.RuleLua, "call_to_gsub": lint.RuleLua, "command_from_table": lint.RuleDynamicCmd,
		"comparator_call": lint.RuleScriptKey, "coroutine_key": lint.RuleScriptKey, "coroutine_wraps_call": lint.RuleLua,
		"helper_called_with_argv": lint.RuleScriptKey, "helper_replaced_in_table": lint.RuleScriptKey,
		"key_grown_in_loop": lint.RuleScriptKey, "load_chunk": lint.RuleLua, "metatable_call": lint.RuleScriptKey,
		"metatable_index": lint.RuleScriptKey, "nested_helper_argv": lint.RuleScriptKey, "pcall_of_call": lint.RuleScriptKey,
		"rcall_alias_retargeted": lint.RuleLua, "recursion": lint.RuleScriptKey, "returned_call": lint.RuleScriptKey,
		"string_format_key": lint.RuleScriptKey, "table_mutated_by_helper": lint.RuleScriptKey,
		"table_of_keys_mutated": lint.RuleScriptKey, "varargs_key": lint.RuleScriptKey, "write_string_metatable": lint.RuleLua,
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.lua"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		if name == "accepted" {
			continue
		}
		rule, ok := rules[name]
		if !ok {
			t.Errorf("%s: no rule listed for this fixture", name)
			continue
		}
		lua := t.TempDir()
		if err := os.MkdirAll(filepath.Join(lua, "a"), 0o755); err != nil {
			t.Fatal(err)
		}
		src, _ := os.ReadFile(f)
		if err := os.WriteFile(filepath.Join(lua, "a", "s.lua"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		var found []string
		for _, fd := range lint.Run("keyspec.yaml", spec, os.DirFS(lua), "lua") {
			found = append(found, fd.Rule)
		}
		if !slices.Contains(found, rule) {
			t.Errorf("%s: lint rules %v, want %s among them", name, found, rule)
		}
	}
}
