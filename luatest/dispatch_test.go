package luatest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/rediscmd"
)

// Every command of Redis's table is, for a script, either implemented, refused
// as Redis refuses it (noscript), or refused naming it as one the harness
// lacks; never "Unknown Redis command".
func TestEveryCommandImplementedOrRefused(t *testing.T) {
	var implemented, refused, noscript []string
	for _, cmd := range rediscmd.All() {
		if cmd.IsContainer() || cmd.Name == "select" {
			continue
		}
		argv := cmd.Words()
		for !cmd.ArityOK(len(argv)) {
			argv = append(argv, "x")
		}
		var src strings.Builder
		src.WriteString("return redis.pcall(")
		for i, a := range argv {
			if i > 0 {
				src.WriteString(", ")
			}
			fmt.Fprintf(&src, "%q", a)
		}
		src.WriteString(")")
		srv := NewServer(NewClock(epoch))
		res := srv.Run(mustLoad(t, src.String()), []string{"x"})
		msg := ""
		if res.Err != nil {
			// redis.pcall's error table, returned: the script's error reply.
			msg = errorText(res.Err)
		}
		_, isBuiltin := builtins[cmd.Name]
		switch {
		case cmd.Has(rediscmd.FlagNoScript):
			noscript = append(noscript, cmd.Display())
			if msg != "ERR This Redis command is not allowed from script" {
				t.Errorf("%s (noscript) answered %q", cmd.Display(), msg)
			}
		case isBuiltin:
			implemented = append(implemented, cmd.Display())
			if strings.Contains(msg, "luatest does not implement") || strings.Contains(msg, "Unknown Redis command") {
				t.Errorf("%s is implemented but answered %q", cmd.Display(), msg)
			}
		default:
			refused = append(refused, cmd.Display())
			if want := "ERR luatest does not implement " + cmd.Display() + " (Server.RegisterCommand can add it)"; msg != want {
				t.Errorf("%s answered %q, want %q", cmd.Display(), msg, want)
			}
		}
	}
	t.Logf("implemented (%d): %s", len(implemented), strings.Join(implemented, ", "))
	t.Logf("refused as not implemented (%d): %s", len(refused), strings.Join(refused, ", "))
	t.Logf("refused in scripts as Redis does (%d): %s", len(noscript), strings.Join(noscript, ", "))
	if len(implemented) < 100 {
		t.Errorf("only %d commands implemented", len(implemented))
	}
}

func TestRegisterCommandErrors(t *testing.T) {
	srv := NewServer(nil)
	fn := func(*Call) (any, error) { return nil, nil }
	tests := []struct {
		name string
		fn   CommandFunc
		spec *CommandSpec
		want string
	}{
		{"dump", nil, nil, "nil CommandFunc"},
		{"", fn, nil, "empty command name"},
		{"dump", fn, &CommandSpec{Arity: 2}, "spec must be nil"},
		{"object", fn, nil, "container command"},
		{"get", fn, nil, "already implements GET"},
		{"my.cmd", fn, nil, "describe it with a CommandSpec"},
		{"my.cmd", fn, &CommandSpec{}, "Arity is 0"},
		{"object nosuch", fn, &CommandSpec{Arity: 2}, "no such subcommand"},
	}
	for _, tc := range tests {
		err := srv.RegisterCommand(tc.name, tc.fn, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RegisterCommand(%q) = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if err := srv.RegisterCommand("DUMP", fn, nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterCommand("dump", fn, nil); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("second registration: %v", err)
	}
	// Registration is per Server.
	if _, err := NewServer(nil).Do("dump", "k"); err == nil || !strings.Contains(err.Error(), "does not implement DUMP") {
		t.Errorf("another Server sees the registration: %v", err)
	}
}

func TestRegisteredCommandsFollowRedisRules(t *testing.T) {
	srv := NewServer(NewClock(epoch))
	var calls [][]string
	record := func(call *Call) (any, error) {
		calls = append(calls, call.Argv)
		return []any{int64(1), "two", Status("THREE"), nil, &ErrorReply{Msg: "INNER oops"}}, nil
	}
	if err := srv.RegisterCommand("object encoding", record, nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterCommand("debug", record, nil); err != nil { // noscript in Redis
		t.Fatal(err)
	}
	if err := srv.RegisterCommand("mod.write", func(*Call) (any, error) { return nil, errors.New("boom\nline") }, &CommandSpec{Arity: -2, Write: true, FirstKey: 1, LastKey: -1, KeyStep: 2}); err != nil {
		t.Fatal(err)
	}
	res := srv.Run(mustLoad(t, "return redis.call('OBJECT', 'ENCODING', KEYS[1])"), []string{"k"})
	if want := []any{int64(1), "two", "THREE", nil, &ErrorReply{Msg: "INNER oops"}}; !reflect.DeepEqual(res.Reply, want) || res.Err != nil {
		t.Fatalf("reply %#v %v", res.Reply, res.Err)
	}
	if !reflect.DeepEqual(res.Typed.([]any)[2], Status("THREE")) || !reflect.DeepEqual(calls, [][]string{{"object", "ENCODING", "k"}}) {
		t.Fatalf("typed %#v calls %q", res.Typed, calls)
	}
	for _, tc := range []struct{ src, want string }{
		{"return redis.pcall('object', 'encoding')", "ERR Wrong number of args calling Redis command from script"},
		{"return redis.pcall('debug', 'sleep', 0)", "ERR This Redis command is not allowed from script"},
		{"#!lua flags=no-writes\nreturn redis.pcall('mod.write', KEYS[1])", "ERR Write commands are not allowed from read-only scripts."},
		{"return redis.pcall('mod.write', KEYS[1], 'x', 'other')", "ERR boom line"},
	} {
		res := srv.Run(mustLoad(t, tc.src), []string{"k"})
		if got := errorText(res.Err); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.src, got, tc.want)
		}
	}
	res = srv.Run(mustLoad(t, "return redis.pcall('mod.write', KEYS[1], 'x', 'other')"), []string{"k"})
	if got := res.Commands[0].Keys; !reflect.DeepEqual(got, []string{"k", "other"}) {
		t.Errorf("keys of mod.write = %q", got)
	}
	if len(res.Violations) != 1 || !strings.Contains(res.Violations[0], `"other" not passed in KEYS`) {
		t.Errorf("violations %q", res.Violations)
	}
	// A client may call what scripts may not.
	if v, err := srv.Do("debug", "x"); err != nil || len(v.([]any)) != 5 {
		t.Errorf("Do(debug) = %#v, %v", v, err)
	}
}

// Entry IDs for "*" come from the Clock and never go backwards.
func TestStreamIDsFollowTheClock(t *testing.T) {
	clock := NewClock(time.UnixMilli(1000))
	srv := NewServer(clock)
	add := func() any {
		t.Helper()
		v, err := srv.Do("xadd", "s", "*", "f", "v")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	got := []any{add(), add()}
	clock.Advance(5 * time.Millisecond)
	got = append(got, add())
	clock.Set(time.UnixMilli(10))
	got = append(got, add())
	if want := []any{"1000-0", "1000-1", "1005-0", "1005-1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("IDs %q, want %q", got, want)
	}
	v, err := srv.Do("xadd", "s", "1005-*", "f", "v")
	if err != nil || v != "1005-2" {
		t.Fatalf("1005-* gave %v %v", v, err)
	}
}

// XREADGROUP's pending entries carry the Clock's time: idle times, XCLAIM and
// XAUTOCLAIM min-idle-time work without sleeping.
func TestStreamPendingFollowsTheClock(t *testing.T) {
	clock := NewClock(epoch)
	srv := NewServer(clock)
	for _, c := range [][]any{{"xadd", "s", "1-1", "f", "v"}, {"xgroup", "create", "s", "g", "0"}, {"xreadgroup", "group", "g", "alice", "streams", "s", ">"}} {
		if _, err := srv.Do(c...); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(1500 * time.Millisecond)
	v, err := srv.Do("xpending", "s", "g", "-", "+", 10)
	if err != nil || !reflect.DeepEqual(v, []any{[]any{"1-1", "alice", int64(1500), int64(1)}}) {
		t.Fatalf("xpending %#v %v", v, err)
	}
	v, err = srv.Do("xautoclaim", "s", "g", "bob", 2000, "0")
	if err != nil || !reflect.DeepEqual(v, []any{"0-0", []any{}, []any{}}) {
		t.Fatalf("too early: %#v %v", v, err)
	}
	clock.Advance(time.Second)
	v, err = srv.Do("xautoclaim", "s", "g", "bob", 2000, "0", "justid")
	if err != nil || !reflect.DeepEqual(v, []any{"0-0", []any{"1-1"}, []any{}}) {
		t.Fatalf("claim: %#v %v", v, err)
	}
}
