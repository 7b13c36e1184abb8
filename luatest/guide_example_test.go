package luatest_test

// The examples of docs/luatest.md that need no spec of the tool's users; the
// ones that run HAN's generated package are in tests/han/luatest. Each of that
// page's Go blocks is in one of the two (TestGuideBlocksAreExamples).
import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hanchat/luagen/luatest"
	"github.com/redis/go-redis/v9"
)

// A run that breaks the harness's rules still replies; its Violations say
// what it broke, one line each, and Check turns them into an error for
// t.Fatal.
func ExampleResult_Violations() {
	srv := luatest.NewServer(nil)
	sc, err := srv.Load("lua/app/tag.lua", []byte(`
redis.call('SET', KEYS[1], ARGV[1])
redis.call('INCR', 'tags:count')
return 1`))
	if err != nil {
		panic(err)
	}
	res := srv.Run(sc, []string{"tag:1"}, "red")
	fmt.Println(res.Reply, res.Err)
	for _, v := range res.Violations {
		fmt.Println(v)
	}
	fmt.Println(res.Check() != nil)
	// Output:
	// 1 <nil>
	// touched key "tags:count" not passed in KEYS
	// key "tag:1" written without a TTL
	// key "tags:count" written without a TTL
	// true
}

// The Clock is the server's time: TIME answers it, TTLs count down by it,
// and it moves only when the test moves it. A key is gone once the clock is
// strictly past its deadline.
func ExampleClock() {
	clock := luatest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := luatest.NewServer(clock)
	now, err := srv.Load("now.lua", []byte(`local t = redis.call('TIME') return t[1] .. '.' .. t[2]`))
	if err != nil {
		panic(err)
	}
	fmt.Println(srv.Run(now, nil).Reply)
	clock.Advance(1500 * time.Millisecond)
	fmt.Println(srv.Run(now, nil).Reply)

	if _, err := srv.Do("SET", "lease", "worker-1", "PX", 100); err != nil {
		panic(err)
	}
	clock.Advance(100 * time.Millisecond)
	n, _ := srv.Do("EXISTS", "lease")
	fmt.Println("at the deadline:", n)
	clock.Advance(time.Millisecond)
	n, _ = srv.Do("EXISTS", "lease")
	fmt.Println("1ms past it:", n)
	// Output:
	// 1767225600.0
	// 1767225601.500000
	// at the deadline: 1
	// 1ms past it: 0
}

// A Server and its Scripters are safe for concurrent use and run one script
// at a time, as Redis does: 50 goroutines of 20 calls each leave the counter
// at exactly 1000, and the Scripter kept every run's Result.
func ExampleServer_Scripter_concurrent() {
	ctx := context.Background()
	srv := luatest.NewServer(nil)
	client := srv.Scripter()
	incr := redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], 60)
return n`)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := incr.Run(ctx, client, []string{"hits"}).Err(); err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
	n, _ := srv.Do("GET", "hits")
	fmt.Println(n, len(client.Results()), client.Check())
	// Output:
	// 1000 1000 <nil>
}
