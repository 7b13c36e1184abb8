package rediscmd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/gen/rediscmd"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// keyCalls are concrete calls covering every kind of key spec: index and
// keyword searches (from the start and from the end), range (fixed, to the end,
// limited), keynum, subcommands, not_key specs and incomplete specs. Arguments
// that may be keys are distinct so the server's answer (key names) maps back to
// positions.
var keyCalls = []string{
	"GET k1", "SET k1 v GET", "DEL k1 k2 k3", "UNLINK k1 k2", "MSET k1 v1 k2 v2", "MGET k1 k2 k3",
	"RENAME k1 k2", "COPY k1 k2", "COPY k1 k2 DB 1 REPLACE", "EXISTS k1 k2", "TOUCH k1 k2",
	"SINTERSTORE d k1 k2", "ZUNIONSTORE d 2 k1 k2 WEIGHTS 1 2", "ZUNIONSTORE d 0 k1", "ZUNIONSTORE d 3 k1 k2",
	"ZUNION 2 k1 k2", "ZINTERCARD 2 k1 k2 LIMIT 5", "SINTERCARD 2 k1 k2", "LMPOP 2 k1 k2 LEFT",
	"BLMPOP 0 2 k1 k2 LEFT", "BZMPOP 0 2 k1 k2 MIN", "XREAD COUNT 1 STREAMS k1 k2 0-0 0-1", "XREAD STREAMS k1 0-0",
	"XREAD COUNT 1 STREAMS", "XREADGROUP GROUP g c STREAMS k1 k2 0-0 0-1", "XREADGROUP GROUP g c COUNT 1 STREAMS k1 >",
	"EVAL body 2 k1 k2 x", "EVAL body 0 x", "EVALSHA sha 1 k1", "FCALL f 1 k1 x", "FCALL_RO f 2 k1 k2",
	"GEORADIUS k1 0 0 1 km STORE d", "GEORADIUS k1 0 0 1 km STOREDIST d", "GEORADIUS k1 0 0 1 km",
	"GEOSEARCHSTORE d s FROMLONLAT 0 0 BYRADIUS 1 km", "OBJECT ENCODING k1", "MEMORY USAGE k1", "XINFO STREAM k1",
	"BITOP AND d k1 k2", "LMOVE k1 k2 LEFT RIGHT", "SMOVE k1 k2 m", "PFMERGE d k1 k2", "PFCOUNT k1 k2",
	"BLPOP k1 k2 0", "BZPOPMIN k1 k2 0", "RPOPLPUSH k1 k2", "ZRANGESTORE d k1 0 1", "XADD k1 * f v",
	"XAUTOCLAIM k1 g c 0 0-0", "XGROUP CREATE k1 g $", "WATCH k1 k2", "SPUBLISH ch m", "PUBLISH ch m",
	"SORT k1", "SORT k1 BY w GET h STORE d", "MIGRATE h 1 \"\" 0 5000 KEYS k1 k2", "SET k1 v", "HSET k1 f v",
	"ZADD k1 1 m", "EXPIRE k1 10", "OBJECT FREQ k1", "LCS k1 k2", "SMISMEMBER k1 a b", "BITFIELD k1 GET u8 0",
}

// KeyPositions agrees with the server's own COMMAND GETKEYSANDFLAGS on every
// call: the same keys with the same flags where the server finds keys, and no
// keys (or an invalid/incomplete error) where it refuses.
func TestKeyPositionsMatchTheServer(t *testing.T) {
	rdb := redistest.Start(t).Client(0)
	ctx := context.Background()
	for _, line := range keyCalls {
		args := strings.Fields(line)
		for i, a := range args {
			if a == `""` {
				args[i] = ""
			}
		}
		t.Run(line, func(t *testing.T) {
			c, err := rediscmd.Resolve(args)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.KeyPositions(args)
			want, serverErr := serverKeys(ctx, rdb, args)
			switch {
			case serverErr != nil && err == nil && len(got) > 0:
				t.Fatalf("the server finds no keys (%v), KeyPositions found %v", serverErr, got)
			case serverErr != nil:
				// Nothing to compare: both find no keys, or the table says why not.
			case errors.Is(err, rediscmd.ErrKeysIncomplete):
				// Only the command's own code knows (the server's answer);
				// the table must say so for a command that is not complete.
				if !c.Incomplete() || len(got) > 0 {
					t.Fatalf("incomplete, but Incomplete() = %v and keys %v", c.Incomplete(), got)
				}
			case err != nil:
				t.Fatalf("KeyPositions: %v; the server finds %v", err, want)
			default:
				var mine []key
				for i, k := range got {
					flags := flagText(k.Flags)
					if slices.Contains(k.Flags, rediscmd.KeyVariableFlags) && i < len(want) {
						// The spec lists the widest flags; the server's own
						// code narrows them to the call (SET without GET: OW).
						flags = want[i].Flags
					}
					mine = append(mine, key{k.Pos, flags})
				}
				if diff := cmp.Diff(want, mine); diff != "" {
					t.Fatalf("keys (-server +table):\n%s", diff)
				}
			}
		})
	}
}

type key struct {
	Pos   int
	Flags string
}

func flagText(f []rediscmd.KeyFlag) string {
	s := make([]string, len(f))
	for i, x := range f {
		s[i] = string(x)
	}
	return strings.Join(s, ",")
}

func serverKeys(ctx context.Context, rdb *redis.Client, args []string) ([]key, error) {
	cmd := []any{"COMMAND", "GETKEYSANDFLAGS"}
	for _, a := range args {
		cmd = append(cmd, a)
	}
	res, err := rdb.Do(ctx, cmd...).Slice()
	if err != nil {
		return nil, err
	}
	var out []key
	for _, r := range res {
		pair := r.([]any)
		name := pair[0].(string)
		var flags []string
		for _, f := range pair[1].([]any) {
			flags = append(flags, f.(string))
		}
		pos := slices.Index(args[1:], name) + 1
		if pos == 0 || slices.Index(args[pos+1:], name) >= 0 {
			return nil, fmt.Errorf("key %q is not one distinct argument of %v", name, args)
		}
		out = append(out, key{pos, strings.Join(flags, ",")})
	}
	return out, nil
}

// ScriptRefusal gives the text Redis gives a script for an unknown command or
// subcommand, a wrong arity and a noscript command, and nothing for a call Redis
// accepts.
func TestScriptRefusalMatchesTheServer(t *testing.T) {
	rdb := redistest.Start(t).Client(0)
	ctx := context.Background()
	for _, line := range []string{
		"xyzzy a", "get", "get k1", "client nope", "client", "client list", "script flush", "script load x",
		"evalsha abc 0", "info", "select 0", "set k1 v", "set k1", "object encoding k1", "object nope k1",
		"blpop k1 0", "xread streams k1 0-0", "time", "subscribe ch",
	} {
		args := strings.Fields(line)
		want := rediscmd.ScriptRefusal(args)
		cmd := []any{"EVAL", "return redis.pcall(unpack(ARGV))", 0}
		for _, a := range args {
			cmd = append(cmd, a)
		}
		err := rdb.Do(ctx, cmd...).Err()
		var got string
		if err != nil && !errors.Is(err, redis.Nil) {
			got = strings.TrimPrefix(err.Error(), "ERR ")
		}
		known := got == rediscmd.ScriptErrUnknown || got == rediscmd.ScriptErrArity || got == rediscmd.ScriptErrNoScript
		if want != "" && got != want || want == "" && known {
			t.Errorf("%s: the server says %q, ScriptRefusal %q", line, got, want)
		}
	}
}

func TestLookupAndResolve(t *testing.T) {
	if c := rediscmd.Lookup("GET"); c == nil || c.Name != "get" || c.Arity != 2 || !c.Has(rediscmd.FlagReadonly) || !c.InCategory("@read") {
		t.Fatalf("GET: %+v", c)
	}
	sub := rediscmd.Lookup("client|LIST")
	if sub == nil || sub.Container() != rediscmd.Lookup("client") || !sub.Has(rediscmd.FlagNoScript) || !sub.InCategory("dangerous") || sub.Display() != "CLIENT LIST" {
		t.Fatalf("client|list: %+v", sub)
	}
	if rediscmd.Lookup("xyzzy") != nil || rediscmd.Lookup("script|nope") != nil {
		t.Fatal("unknown names resolve")
	}
	if _, err := rediscmd.Resolve([]string{"SCRIPT", "NOPE"}); !errors.Is(err, rediscmd.ErrUnknownSubcommand) {
		t.Fatalf("SCRIPT NOPE: %v", err)
	}
	if _, err := rediscmd.Resolve([]string{"xyzzy"}); !errors.Is(err, rediscmd.ErrUnknownCommand) {
		t.Fatalf("xyzzy: %v", err)
	}
	if c, err := rediscmd.Resolve([]string{"client"}); err != nil || c.Name != "client" || c.CheckArity(1) == nil {
		t.Fatalf("CLIENT alone: %v %v", c, err)
	}
	get := rediscmd.Lookup("get")
	if !errors.Is(get.CheckArity(1), rediscmd.ErrArity) || get.CheckArity(2) != nil || get.CheckArity(3) == nil {
		t.Fatal("GET arity")
	}
	del := rediscmd.Lookup("del")
	if del.CheckArity(1) == nil || del.CheckArity(2) != nil || del.CheckArity(9) != nil {
		t.Fatal("DEL arity")
	}
	for name, want := range map[string]bool{"publish": true, "pfcount": true, "set": true, "get": false, "time": false} {
		if got := rediscmd.Lookup(name).RefusedReadOnly(); got != want {
			t.Errorf("%s: RefusedReadOnly %v, want %v", name, got, want)
		}
	}
	if !rediscmd.Lookup("copy").HasToken("db") || rediscmd.Lookup("rename").HasToken("DB") {
		t.Fatal("HasToken")
	}
	all := rediscmd.All()
	if len(all) < 350 || !slices.IsSortedFunc(all, func(a, b *rediscmd.Command) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatalf("All: %d commands", len(all))
	}
	for _, c := range all {
		if c.Arity == 0 || (c.Container() != nil && !strings.HasPrefix(c.Name, c.Container().Name+"|")) {
			t.Errorf("%s: arity %d, container %v", c.Name, c.Arity, c.Container())
		}
	}
}

// Static key positions: exact where the arguments that decide them are
// literals (or numbers, which are never keywords), ErrKeysUnresolved where they
// depend on text not known.
func TestStaticKeyPositions(t *testing.T) {
	L, other, number, spread := rediscmd.Literal, rediscmd.Arg{}, rediscmd.Arg{Number: true}, rediscmd.Arg{Spread: true}
	for name, tc := range map[string]struct {
		args []rediscmd.Arg
		want []int
		err  error
	}{
		"fixed key, trailing spread":      {[]rediscmd.Arg{L("zrem"), other, spread}, []int{1}, nil},
		"keys to the end, spread":         {[]rediscmd.Arg{L("del"), other, spread}, nil, rediscmd.ErrKeysUnresolved},
		"keys to the end":                 {[]rediscmd.Arg{L("del"), other, other, other}, []int{1, 2, 3}, nil},
		"mset pairs":                      {[]rediscmd.Arg{L("mset"), other, other, other, other}, []int{1, 3}, nil},
		"numkeys literal":                 {[]rediscmd.Arg{L("zunionstore"), other, L("2"), other, other}, []int{1, 3, 4}, nil},
		"numkeys not literal":             {[]rediscmd.Arg{L("zunionstore"), other, number, other, other}, nil, rediscmd.ErrKeysUnresolved},
		"numkeys not a number":            {[]rediscmd.Arg{L("zunionstore"), other, L("two"), other}, nil, rediscmd.ErrKeysInvalid},
		"keyword after a number":          {[]rediscmd.Arg{L("xread"), L("COUNT"), number, L("STREAMS"), other, other}, []int{4}, nil},
		"keyword after an unknown":        {[]rediscmd.Arg{L("xread"), L("COUNT"), other, L("STREAMS"), other, other}, nil, rediscmd.ErrKeysUnresolved},
		"keyword, then spread":            {[]rediscmd.Arg{L("xread"), L("STREAMS"), other, spread}, nil, rediscmd.ErrKeysUnresolved},
		"keyword may be in the spread":    {[]rediscmd.Arg{L("georadius"), other, L("0"), L("0"), L("1"), L("km"), spread}, nil, rediscmd.ErrKeysUnresolved},
		"absent keyword":                  {[]rediscmd.Arg{L("georadius"), other, L("0"), L("0"), L("1"), L("km"), L("ASC")}, []int{1}, nil},
		"keyword from the end, spread":    {[]rediscmd.Arg{L("migrate"), L("h"), L("1"), L(""), L("0"), L("5"), spread}, nil, rediscmd.ErrKeysUnresolved},
		"incomplete spec":                 {[]rediscmd.Arg{L("sort"), other}, nil, rediscmd.ErrKeysIncomplete},
		"numkeys 0":                       {[]rediscmd.Arg{L("zunionstore"), other, L("0"), other}, nil, nil},
		"not_key spec":                    {[]rediscmd.Arg{L("spublish"), other, other}, nil, nil},
		"no keys":                         {[]rediscmd.Arg{L("time")}, nil, nil},
		"subcommand key":                  {[]rediscmd.Arg{L("object"), L("encoding"), other}, []int{2}, nil},
		"a spread before the last":        {[]rediscmd.Arg{L("get"), spread, other}, nil, rediscmd.ErrKeysUnresolved},
		"too few arguments for the range": {[]rediscmd.Arg{L("get")}, nil, rediscmd.ErrKeysInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := rediscmd.Resolve([]string{tc.args[0].Text, tc.args[min(1, len(tc.args)-1)].Text})
			if err != nil {
				t.Fatal(err)
			}
			keys, err := c.StaticKeyPositions(tc.args)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			var got []int
			for _, k := range keys {
				got = append(got, k.Pos)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("positions (-want +got):\n%s", diff)
			}
			var ke *rediscmd.KeyError
			if err != nil && (!errors.As(err, &ke) || ke.Reason == "") {
				t.Fatalf("error %v is not a *KeyError with a reason", err)
			}
		})
	}
}
