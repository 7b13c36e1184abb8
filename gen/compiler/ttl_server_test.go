package compiler

import (
	"context"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/gen/rediscmd"
	"github.com/hanchat/luagen/internal/redistest"
)

// creation is one call of a write command on a server where key "k" is
// missing (and "src", a key of the right type, exists where the call reads
// one): whether "k" exists afterwards is the truth mayCreate must tell.
type creation struct {
	setup [][]string
	call  []string
}

// creations hold a call of every write command whose key specs say it may
// insert, update or overwrite (what mayCreate reads from Redis's table), and
// of the calls whose options say otherwise.
var creations = map[string]creation{
	"append":                {call: []string{"append", "k", "x"}},
	"bitfield":              {call: []string{"bitfield", "k", "set", "u8", "0", "1"}},
	"bitop":                 {setup: [][]string{{"set", "src", "a"}}, call: []string{"bitop", "not", "k", "src"}},
	"decr":                  {call: []string{"decr", "k"}},
	"decrby":                {call: []string{"decrby", "k", "2"}},
	"expire":                {call: []string{"expire", "k", "10"}},
	"expireat":              {call: []string{"expireat", "k", "99999999999"}},
	"geoadd":                {call: []string{"geoadd", "k", "13.36", "38.11", "p"}},
	"georadius":             {setup: [][]string{{"geoadd", "src", "13.36", "38.11", "p"}}, call: []string{"georadius", "src", "13.36", "38.11", "10", "km", "store", "k"}},
	"georadiusbymember":     {setup: [][]string{{"geoadd", "src", "13.36", "38.11", "p"}}, call: []string{"georadiusbymember", "src", "p", "10", "km", "store", "k"}},
	"geosearchstore":        {setup: [][]string{{"geoadd", "src", "13.36", "38.11", "p"}}, call: []string{"geosearchstore", "k", "src", "fromlonlat", "13.36", "38.11", "byradius", "10", "km"}},
	"getex":                 {call: []string{"getex", "k", "px", "1000"}},
	"getset":                {call: []string{"getset", "k", "x"}},
	"hincrby":               {call: []string{"hincrby", "k", "f", "1"}},
	"hincrbyfloat":          {call: []string{"hincrbyfloat", "k", "f", "1.5"}},
	"hmset":                 {call: []string{"hmset", "k", "f", "v"}},
	"hset":                  {call: []string{"hset", "k", "f", "v"}},
	"hsetnx":                {call: []string{"hsetnx", "k", "f", "v"}},
	"incr":                  {call: []string{"incr", "k"}},
	"incrby":                {call: []string{"incrby", "k", "2"}},
	"incrbyfloat":           {call: []string{"incrbyfloat", "k", "1.5"}},
	"linsert":               {call: []string{"linsert", "k", "before", "a", "b"}},
	"lmove":                 {setup: [][]string{{"rpush", "src", "a"}}, call: []string{"lmove", "src", "k", "left", "right"}},
	"lpush":                 {call: []string{"lpush", "k", "a"}},
	"lpushx":                {call: []string{"lpushx", "k", "a"}},
	"lset":                  {call: []string{"lset", "k", "0", "a"}},
	"mset":                  {call: []string{"mset", "k", "a"}},
	"msetnx":                {call: []string{"msetnx", "k", "a"}},
	"persist":               {call: []string{"persist", "k"}},
	"pexpire":               {call: []string{"pexpire", "k", "1000"}},
	"pexpireat":             {call: []string{"pexpireat", "k", "99999999999999"}},
	"pfadd":                 {call: []string{"pfadd", "k", "a"}},
	"pfmerge":               {setup: [][]string{{"pfadd", "src", "a"}}, call: []string{"pfmerge", "k", "src"}},
	"psetex":                {call: []string{"psetex", "k", "1000", "a"}},
	"rename":                {setup: [][]string{{"set", "src", "a"}}, call: []string{"rename", "src", "k"}},
	"renamenx":              {setup: [][]string{{"set", "src", "a"}}, call: []string{"renamenx", "src", "k"}},
	"rpoplpush":             {setup: [][]string{{"rpush", "src", "a"}}, call: []string{"rpoplpush", "src", "k"}},
	"rpush":                 {call: []string{"rpush", "k", "a"}},
	"rpushx":                {call: []string{"rpushx", "k", "a"}},
	"sadd":                  {call: []string{"sadd", "k", "a"}},
	"sdiffstore":            {setup: [][]string{{"sadd", "src", "a"}}, call: []string{"sdiffstore", "k", "src"}},
	"set":                   {call: []string{"set", "k", "a"}},
	"set xx":                {call: []string{"set", "k", "a", "XX"}},
	"setbit":                {call: []string{"setbit", "k", "7", "1"}},
	"setex":                 {call: []string{"setex", "k", "10", "a"}},
	"setnx":                 {call: []string{"setnx", "k", "a"}},
	"setrange":              {call: []string{"setrange", "k", "2", "a"}},
	"sinterstore":           {setup: [][]string{{"sadd", "src", "a"}}, call: []string{"sinterstore", "k", "src"}},
	"smove":                 {setup: [][]string{{"sadd", "src", "a"}}, call: []string{"smove", "src", "k", "a"}},
	"sunionstore":           {setup: [][]string{{"sadd", "src", "a"}}, call: []string{"sunionstore", "k", "src"}},
	"xack":                  {call: []string{"xack", "k", "g", "1-0"}},
	"xadd":                  {call: []string{"xadd", "k", "*", "f", "v"}},
	"xadd nomkstream":       {call: []string{"xadd", "k", "NOMKSTREAM", "*", "f", "v"}},
	"xclaim":                {call: []string{"xclaim", "k", "g", "c", "0", "1-0"}},
	"xgroup|create":         {call: []string{"xgroup", "create", "k", "g", "$", "MKSTREAM"}},
	"xgroup|create plain":   {call: []string{"xgroup", "create", "k", "g", "$"}},
	"xgroup|createconsumer": {call: []string{"xgroup", "createconsumer", "k", "g", "c"}},
	"xgroup|setid":          {call: []string{"xgroup", "setid", "k", "g", "$"}},
	"xsetid":                {call: []string{"xsetid", "k", "1-0"}},
	"xautoclaim":            {call: []string{"xautoclaim", "k", "g", "c", "0", "0-0"}},
	"zadd":                  {call: []string{"zadd", "k", "1", "a"}},
	"zdiffstore":            {setup: [][]string{{"zadd", "src", "1", "a"}}, call: []string{"zdiffstore", "k", "1", "src"}},
	"zincrby":               {call: []string{"zincrby", "k", "1", "a"}},
	"zinterstore":           {setup: [][]string{{"zadd", "src", "1", "a"}}, call: []string{"zinterstore", "k", "1", "src"}},
	"zrangestore":           {setup: [][]string{{"zadd", "src", "1", "a"}}, call: []string{"zrangestore", "k", "src", "0", "-1"}},
	"zunionstore":           {setup: [][]string{{"zadd", "src", "1", "a"}}, call: []string{"zunionstore", "k", "1", "src"}},
}

// asCall is a call of args as the script reader would see it, all literals.
func asCall(args []string) luascript.Call {
	c := luascript.Call{Command: args[0]}
	for _, a := range args {
		c.Args = append(c.Args, luascript.Arg{Kind: luascript.ArgString, Text: a})
	}
	for _, a := range args[1:] {
		c.Literals = append(c.Literals, strings.ToLower(a))
	}
	return c
}

// Every write command that Redis's key specs say may insert, update or
// overwrite is called on a real server on a missing key: mayCreate says it
// creates the key exactly when the server does. This is what the short list
// neverCreates rests on, and it fails when a regenerated table brings a
// command with such key specs that no creation covers.
func TestNeverCreatesOnAServer(t *testing.T) {
	redistest.Need(t)
	rdb := redistest.Start(t).Client(0)
	ctx := context.Background()
	covered := map[string]bool{}
	for name, cr := range creations {
		words := cr.call
		cmd := rediscmd.Lookup(words[0])
		if cmd != nil && cmd.IsContainer() {
			cmd = cmd.Subcommand(words[1])
		}
		if cmd == nil {
			t.Fatalf("%s: no such command in the table", name)
		}
		covered[cmd.Name] = true
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for _, s := range cr.setup {
			if err := rdb.Do(ctx, toAny(s)...).Err(); err != nil {
				t.Fatalf("%s: setup %v: %v", name, s, err)
			}
		}
		rdb.Do(ctx, toAny(words)...) // an error (XACK of no stream) creates nothing either
		exists, err := rdb.Exists(ctx, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		c := asCall(words)
		keys, err := cmd.KeyPositions(words)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		says := false
		for _, k := range keys {
			if words[k.Pos] == "k" && mayCreate(cmd, c, k.Flags) {
				says = true
			}
		}
		if says != (exists == 1) {
			t.Errorf("%s: mayCreate says %v, the server created k: %v", name, says, exists == 1)
		}
	}
	for _, c := range rediscmd.All() {
		for _, sub := range append([]*rediscmd.Command{c}, subcommands(c)...) {
			if !sub.Has(rediscmd.FlagWrite) || sub.Has(rediscmd.FlagNoScript) || keyspec.NeverGranted(sub) != "" || covered[sub.Name] {
				continue
			}
			for _, ks := range sub.KeySpecs {
				if hasFlag(ks.Flags, rediscmd.KeyInsert) || hasFlag(ks.Flags, rediscmd.KeyOW) || hasFlag(ks.Flags, rediscmd.KeyUpdate) && hasFlag(ks.Flags, rediscmd.KeyRW) {
					t.Errorf("%s may create a key by its key specs, and no call of it is in creations", sub.Name)
					break
				}
			}
		}
	}
}

func subcommands(c *rediscmd.Command) []*rediscmd.Command {
	var out []*rediscmd.Command
	for i := range c.Subcommands {
		out = append(out, &c.Subcommands[i])
	}
	return out
}

func toAny(words []string) []any {
	out := make([]any, len(words))
	for i, w := range words {
		out[i] = w
	}
	return out
}
