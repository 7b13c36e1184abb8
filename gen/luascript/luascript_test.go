package luascript_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/gen/luascript"
)

var update = flag.Bool("update", false, "rewrite testdata/reading/*.golden")

// Each testdata/reading/NAME.lua is a script in one idiom of public job queues,
// locks and limiters (written for these tests); NAME.golden is its reading: every
// call with the command, the values of its arguments and the helper calls it is
// reached through, and what the reading cannot follow.
func TestReadingsOfIdioms(t *testing.T) {
	files, _ := filepath.Glob("testdata/reading/*.lua")
	if len(files) < 10 {
		t.Fatalf("only %d idioms", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".lua"), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			info, err := luascript.Analyze(filepath.Base(f), src)
			if err != nil {
				t.Fatal(err)
			}
			got := info.Reading()
			golden := strings.TrimSuffix(f, ".lua") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("reading:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestAnalyzeReadsFlagsKeysAndArgv(t *testing.T) {
	src := `#!lua flags=no-writes,allow-stale
local k = KEYS[1]
local n = tonumber(ARGV[2])
local v = redis.call('GET', KEYS[1])
local ok = redis.pcall("hget", KEYS[2], 'f')
for i = 1, #KEYS do
  redis.call('EXISTS', KEYS[i])
end
local cmd = ARGV[1]
redis.call(cmd, k)
return {v, ok, n}
`
	info, err := luascript.Analyze("x.lua", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !info.Shebang || !info.HasFlag("no-writes") || !info.HasFlag("allow-stale") {
		t.Errorf("flags: %v", info.Flags)
	}
	if diff := cmp.Diff([]string{"exists", "get", "hget"}, info.Commands()); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	want := "4: call GET KEYS[1]\n5: pcall HGET KEYS[2] \"f\"\n7: call EXISTS KEYS[i]\n10: call <command not known> KEYS[1]\n3: ARGV[2] is used as a number\n"
	if got := info.Reading(); got != want {
		t.Errorf("reading:\n%s\nwant:\n%s", got, want)
	}
	if c := info.Calls[0]; c.FirstKey != 1 || c.Args[1].Kind != luascript.ArgKey || c.Args[1].Key != 1 {
		t.Errorf("GET KEYS[1]: %+v", c)
	}
	if c := info.Calls[3]; c.Command != "" || c.Args[0].Kind != luascript.ArgArgv || c.Args[0].Argv != 1 || c.Args[0].Desc != "local cmd" {
		t.Errorf("a command from ARGV: %+v", c.Args[0])
	}
	if info.MaxKey() != 2 || info.MaxArg() != 2 {
		t.Errorf("MaxKey %d MaxArg %d", info.MaxKey(), info.MaxArg())
	}
	dynamic := false
	for _, r := range info.Keys {
		if r.Index == 0 && r.Line == 7 {
			dynamic = true
		}
	}
	if !dynamic {
		t.Error("KEYS[i] not reported as a dynamic read")
	}
	if len(info.Globals) != 0 {
		t.Errorf("globals: %+v", info.Globals)
	}
}

func TestAnalyzeFindsGlobals(t *testing.T) {
	src := "count = 1\nlocal x = undefined_thing\nfunction helper() return os.time() end\nlocal function ok(a) return a end\nreturn ok(x)"
	info, err := luascript.Analyze("g.lua", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []luascript.Global{
		{Line: 1, Name: "count", Write: true},
		{Line: 2, Name: "undefined_thing"},
		{Line: 3, Name: "helper", Write: true},
		{Line: 3, Name: "os"},
	}
	if diff := cmp.Diff(want, info.Globals); diff != "" {
		t.Errorf("globals (-want +got):\n%s", diff)
	}
}

func TestAnalyzeRejectsWhatRedisRejects(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"goto":            {"local i = 1\ngoto skip\n::skip::\nreturn i", "g.lua:2: goto is Lua 5.2"},
		"label":           {"::top::\nreturn 1", "g.lua:1: labels"},
		"goto in closure": {"local f = function()\n  goto x\n  ::x::\nend\nreturn 1", "g.lua:2: goto"},
		"syntax":          {"local = 1", "g.lua:1:"},
		"engine":          {"#!js\nreturn 1", "g.lua:1: shebang must be #!lua"},
		"flag":            {"#!lua flags=fast\nreturn 1", `g.lua:1: shebang flag "fast"`},
		"option":          {"#!lua name=x\nreturn 1", `g.lua:1: shebang option "name=x"`},
	} {
		_, err := luascript.Analyze("g.lua", []byte(tc.src))
		if !errors.Is(err, luascript.ErrSyntax) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

func TestBodyKeepsLineNumbers(t *testing.T) {
	got := string(luascript.Body([]byte("#!lua flags=no-writes\nreturn 1\n")))
	if got != "\nreturn 1\n" {
		t.Fatalf("Body = %q", got)
	}
	if got := string(luascript.Body([]byte("return 1"))); got != "return 1" {
		t.Fatalf("Body without shebang = %q", got)
	}
}

// Whatever could call a command or touch a key out of the reading's sight is
// reported: redis as a value, loadstring, _G, rawget; a local that held KEYS[n]
// stops counting as that key once reassigned; error_reply codes are read.
func TestAnalyzeReportsWhatItCannotFollow(t *testing.T) {
	src := `local r = redis
r.call('FLUSHALL')
local f = loadstring("return 1")
local g = _G['redis']
local x = rawget(_G, 'redis')
local k = KEYS[1]
k = 'han:api:forged'
redis.call('GET', k)
redis.call('SET', 'literal:key', 1)
if ARGV[1] == 'x' then return redis.error_reply('NOT_OWNER no') end
redis.log(redis.LOG_NOTICE, 'fine')
return redis.error_reply('BAD_ARG ' .. ARGV[1])
`
	info, err := luascript.Analyze("d.lua", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var dyn []string
	for _, d := range info.Dynamic {
		dyn = append(dyn, fmt.Sprintf("%d:%s", d.Line, d.What))
	}
	want := []string{"1:redis used as a value", "3:loadstring", "3:calls a function the reading cannot name (loadstring)",
		"4:_G", "5:rawget", "5:_G", "5:calls a function the reading cannot name (rawget)"}
	if diff := cmp.Diff(want, dyn); diff != "" {
		t.Errorf("dynamic uses (-want +got):\n%s", diff)
	}
	for _, c := range info.Calls {
		if c.Line == 8 && c.FirstKey != 0 {
			t.Errorf("a reassigned local still counts as KEYS[%d]", c.FirstKey)
		}
		if c.Line == 9 && c.FirstKey != 0 {
			t.Error("a literal key counts as a KEYS position")
		}
	}
	if diff := cmp.Diff([]luascript.Ref{{Line: 10, Code: "NOT_OWNER"}, {Line: 12, Code: "BAD_ARG"}}, info.Errors); diff != "" {
		t.Errorf("error codes (-want +got):\n%s", diff)
	}
	other, _ := luascript.Analyze("e.lua", []byte("return redis.error_reply(ARGV[1])"))
	if len(other.Errors) != 1 || other.Errors[0].Code != "" {
		t.Errorf("a message that is not a literal: %+v", other.Errors)
	}
}

// What the reading knows of each argument of a call: literals as Redis receives
// them, numbers (never a keyword), KEYS through aliases never reassigned in their
// scope (loops and closures included), and a trailing spread. Code that never
// runs (a function never called) changes nothing.
func TestAnalyzeClassifiesArguments(t *testing.T) {
	src := `local k = KEYS[1]
local k2 = k
local moved = KEYS[2]
local n = tonumber(ARGV[1]) or 10
local text = ARGV[2]
local later = 5
for i = 1, 2 do
  redis.call('X', k2, moved, n, 0x10, -3, 2.5, ARGV[1], later, text, #ARGV, unpack(ARGV))
  moved = 'elsewhere'
end
local function f() later = ARGV[1] end
local function g() text = KEYS[1] end
g()
redis.call('Y', (unpack(ARGV)), KEYS[2] .. ':x', ...)
`
	info, err := luascript.Analyze("a.lua", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var kinds [][]string
	for _, c := range info.Calls {
		var k []string
		for _, a := range c.Args[1:] {
			switch a.Kind {
			case luascript.ArgString, luascript.ArgInteger:
				k = append(k, "lit:"+a.Text)
			case luascript.ArgNumber:
				k = append(k, "num")
			case luascript.ArgKey:
				k = append(k, fmt.Sprintf("KEYS[%d]", a.Key))
			case luascript.ArgArgv:
				k = append(k, fmt.Sprintf("ARGV[%d]", a.Argv))
			case luascript.ArgSpread:
				k = append(k, "spread")
			default:
				k = append(k, "other:"+a.Desc+" = "+a.String())
			}
		}
		kinds = append(kinds, k)
	}
	want := [][]string{
		{"KEYS[1]", `other:local moved (assigned again at line 9) = {KEYS[2] | "elsewhere"}`, "num", "lit:16", "lit:-3", "num", "ARGV[1]",
			"lit:5", "other:local text (assigned again at line 12) = {ARGV[2] | KEYS[1]}", "num", "spread"},
		{"ARGV[0]", `other:KEYS[2] .. ":x" = KEYS[2] .. ":x"`},
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
}

// Everything that would undo the reading is reported with its line and kind:
// KEYS written or handed to code that may change it, redis/KEYS/ARGV hidden or
// assigned, replication switched off (redis.replicate_commands, a no-op in
// Redis 7, is not).
func TestAnalyzeReportsUnsafeUses(t *testing.T) {
	src := `KEYS[1] = 'x'
table.insert(KEYS, 'y')
local t = KEYS
for _, k in ipairs(KEYS) do end
local n = #KEYS .. table.concat(KEYS, ',') .. cjson.encode(KEYS)
local function f(redis) return 1 end
local ARGV = {}
for KEYS = 1, 2 do end
KEYS = {}
redis.set_repl(redis.REPL_NONE)
redis.replicate_commands()
redis.call = nil
function redis.pcall() end
sort(KEYS)
redis.call('GET', KEYS)
`
	info, err := luascript.Analyze("u.lua", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range info.Unsafe {
		got = append(got, fmt.Sprintf("%d:%s", u.Line, u.Rule))
	}
	want := []string{
		"1:keys-read-only", "2:keys-read-only", "3:keys-read-only", "6:shadow", "7:shadow", "8:shadow", "9:shadow",
		"10:replication", "12:shadow", "13:shadow", "14:keys-read-only", "15:keys-read-only",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unsafe uses (-want +got):\n%s", diff)
	}
}
