package lint_test

import (
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
