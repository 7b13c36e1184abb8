package luatest_test

// The examples of docs/luatest.md, the harness as a test author uses it; each
// of that page's Go blocks is in this file (TestGuideBlocksAreExamples).

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/rueidisbackend"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
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

// ScripterFor checks each run of a spec's script against the spec at run time:
// the keys it touched against the patterns it may reach, the TTL rule of each
// key it wrote, a declared max_len. The generated wrappers run on it as on
// Scripter.
func ExampleServer_ScripterFor() {
	spec, err := keyspec.Load("../keyspec.yaml")
	if err != nil {
		panic(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../lua"), "lua")
	if err != nil {
		panic(err)
	}
	srv := luatest.NewServer(nil)
	scripts, err := vm1.NewScripts(vm1.Clients{DB1: srv.ScripterFor(spec, srcs, "")})
	if err != nil {
		panic(err)
	}
	_ = scripts // call the wrappers; Check on the Scripter, or each Result's Violations, say what broke the spec
}

// On real servers, a deploy step loads the scripts as the loader user the
// generated aclfile declares (SCRIPT LOAD and PING only), on every node, and
// reports per node; the application user may then only EVALSHA. WithLoader
// instead lets the application recover from NOSCRIPT itself (a restart, a
// failover to an unloaded replica) by loading through the loader's client,
// and only the scripts it names.
func Example_preload() {
	ctx := context.Background()
	addr := os.Getenv("REDIS_ADDR")
	loader := redis.NewClient(&redis.Options{Addr: addr, DB: 1, Username: "vm1_loader", Password: os.Getenv("LOADER_PASSWORD")})
	report, err := runtime.PreloadNodes(ctx, loader, vm1.AllScripts()...)
	fmt.Print(report) // one line per node: role, address, scripts loaded
	if err != nil {
		panic(err)
	}

	app := redis.NewClient(&redis.Options{Addr: addr, DB: 1, Username: "api_backend", Password: os.Getenv("APP_PASSWORD")})
	app = runtime.WithLoader(app, loader, vm1.AllScripts()...)
	scripts, err := vm1.NewScripts(vm1.Clients{DB1: app})
	if err != nil {
		panic(err)
	}
	_ = scripts
}

// The rueidis backend: rueidisbackend.New checks the client's database (CLIENT
// INFO) and is what a client: rueidis package's Clients take; its Preload and
// PreloadNodes are runtime's, on rueidis.
func Example_rueidis() {
	ctx := context.Background()
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{os.Getenv("REDIS_ADDR")}, SelectDB: 1,
		Username: "vm1_loader", Password: os.Getenv("LOADER_PASSWORD"),
		DisableCache: true, // scripts do not use client-side caching
	})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	conn, err := rueidisbackend.New(ctx, rc)
	if err != nil {
		panic(err)
	}
	if err := rueidisbackend.Preload(ctx, conn, vm1.AllScripts()...); err != nil {
		panic(err)
	}
}
