package luascript_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/gen/luascript"
)

func TestAnalyzeReadsCommandsKeysArgvAndFlags(t *testing.T) {
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
local f = redis.call
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
	wantCalls := []luascript.Call{
		{Line: 4, Fn: "call", Command: "get", Keys: []int{1}},
		{Line: 5, Fn: "pcall", Command: "hget", Keys: []int{2}},
		{Line: 7, Fn: "call", Command: "exists"},
		{Line: 10, Fn: "call"},
		{Line: 11, Fn: "call"},
	}
	if diff := cmp.Diff(wantCalls, info.Calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
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
