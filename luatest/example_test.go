package luatest_test

import (
	"fmt"
	"strconv"
	"time"

	"github.com/hanchat/luagen/luatest"
)

func ExampleServer_Run() {
	clock := luatest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := luatest.NewServer(clock)
	sc, err := srv.Load("app/counter.lua", []byte(`
local n = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return n`))
	if err != nil {
		panic(err)
	}
	res := srv.Run(sc, []string{"counter:1"}, 60)
	fmt.Println(res.Reply, res.Err, res.TTLs["counter:1"], res.Check())

	clock.Advance(61 * time.Second)
	fmt.Println(srv.Keyspace())

	res = srv.Run(sc, []string{"counter:1", "other"}, 60)
	fmt.Println(res.Reply, res.Check() == nil)

	res = srv.Run(sc, []string{"counter:2"}, "soon")
	fmt.Println(res.Err)
	// Output:
	// 1 <nil> 1m0s <nil>
	// map[]
	// 1 true
	// ERR value is not an integer or out of range script: 3f63a1182bda35bcfe1de4fc094f7682327a246f, on @user_script:3.
}

// A service whose scripts call a command the harness lacks registers it: here
// OBJECT ENCODING (a Redis command, so Redis's own table gives its arity, flags
// and key) and a module's command, which needs a CommandSpec.
func ExampleServer_RegisterCommand() {
	srv := luatest.NewServer(nil)
	sc, err := srv.Load("encoding.lua", []byte(`
redis.call('SET', KEYS[1], ARGV[1])
local enc = redis.call('OBJECT', 'ENCODING', KEYS[1])
local hashed = redis.call('HASH.PUT', KEYS[2], ARGV[1])
return {enc, hashed}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(srv.Run(sc, []string{"k", "h"}, "12345").Err)

	err = srv.RegisterCommand("OBJECT ENCODING", func(call *luatest.Call) (any, error) {
		v, err := call.Do("GET", call.Keys[0])
		if err != nil || v == nil {
			return v, err
		}
		if _, err := strconv.ParseInt(v.(string), 10, 64); err == nil {
			return "int", nil
		}
		return "embstr", nil
	}, nil)
	if err != nil {
		panic(err)
	}
	err = srv.RegisterCommand("HASH.PUT", func(call *luatest.Call) (any, error) {
		if _, err := call.Do("SET", call.Keys[0], call.Argv[2], "EX", 60); err != nil {
			return nil, err
		}
		return luatest.Status("STORED"), nil
	}, &luatest.CommandSpec{Arity: 3, Write: true, FirstKey: 1, LastKey: 1, KeyStep: 1})
	if err != nil {
		panic(err)
	}
	res := srv.Run(sc, []string{"k", "h"}, "12345")
	fmt.Println(res.Typed, res.Err, res.TTLs["h"])
	// Output:
	// ERR luatest does not implement OBJECT ENCODING (Server.RegisterCommand can add it) script: c1f8a98598a7daea5669c3b4e4c435feec98d2d0, on @user_script:3.
	// [int STORED] <nil> 1m0s
}
