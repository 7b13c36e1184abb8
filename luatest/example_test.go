package luatest_test

import (
	"fmt"
	"time"

	"github.com/hanchat/luagen/luatest"
)

func ExampleServer_Run() {
	clock := luatest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := luatest.NewServer(clock)
	sc, err := srv.Load("vm1/counter.lua", []byte(`
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
