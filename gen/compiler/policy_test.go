package compiler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/gen/rediscmd"
)

// callable reports whether checkCall lets a script call c: a call of the
// least count of arguments c takes, each "1" (a count, never a keyword), with
// KEYS[1] at every key position Redis's key specs find.
func callable(c *rediscmd.Command) bool {
	if c.IsContainer() {
		// A container alone: checkCall wants its subcommand.
		_, found, _ := checkCall(&keyspec.Script{Name: "s"}, luascript.Call{Command: c.Name, Args: []luascript.Arg{{Kind: luascript.ArgString, Text: c.Name}}})
		return len(found) == 0
	}
	words := c.Words()
	n := max(c.Arity, -c.Arity)
	concrete := append([]string{}, words...)
	for len(concrete) < n {
		concrete = append(concrete, "1")
	}
	call := luascript.Call{Fn: "call", Command: words[0]}
	for _, w := range concrete {
		call.Args = append(call.Args, luascript.Arg{Kind: luascript.ArgString, Text: w})
	}
	if keys, err := c.KeyPositions(concrete); err == nil {
		for _, k := range keys {
			call.Args[k.Pos] = luascript.Arg{Kind: luascript.ArgKey, Key: 1}
		}
	}
	_, found, _ := checkCall(&keyspec.Script{Name: "s"}, call)
	return len(found) == 0
}

// The subcommands a script may call are exactly those docs/commands.md lists;
// every other subcommand of every container is refused, and no container is
// ever callable (or granted) whole.
func TestCallableSubcommandsAreTheDocumentedOnes(t *testing.T) {
	var got []string
	for _, c := range rediscmd.All() {
		if c.Container() != nil && callable(c) {
			got = append(got, c.Name)
		}
		if c.IsContainer() && callable(c) {
			t.Errorf("container %s is callable whole", c.Name)
		}
	}
	want := []string{
		"memory|usage", "object|encoding", "object|freq", "object|idletime", "object|refcount",
		"xgroup|create", "xgroup|createconsumer", "xgroup|delconsumer", "xgroup|destroy", "xgroup|setid",
		"xinfo|consumers", "xinfo|groups", "xinfo|stream",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("callable subcommands (-documented +table):\n%s", diff)
	}
	for _, name := range []string{"info", "dbsize", "keys", "scan", "randomkey", "flushall", "flushdb", "swapdb", "move", "copy",
		"sort", "sort_ro", "migrate", "restore", "eval", "evalsha", "fcall", "client|list", "client|pause", "script|flush",
		"config|get", "cluster|getkeysinslot", "memory|stats", "command|info", "pubsub|channels", "blpop", "wait", "select"} {
		if c := rediscmd.Lookup(name); c == nil || callable(c) {
			t.Errorf("%s: callable from scripts", name)
		}
	}
	for _, name := range []string{"get", "set", "del", "unlink", "mset", "rename", "xread", "xadd", "zunionstore", "publish", "time", "ping"} {
		if !callable(rediscmd.Lookup(name)) {
			t.Errorf("%s: refused in scripts", name)
		}
	}
}
