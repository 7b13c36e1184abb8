package luatestguide_test

// The examples of docs/luatest.md that run a generated package (HAN's vm1,
// standing for the reader's own); the others are in luatest/guide_example_test.go.
import (
	"context"
	"fmt"
	"os"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/rueidisbackend"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// ScripterFor checks each run of a spec's script against the spec at run time:
// the keys it touched against the patterns it may reach, the TTL rule of each
// key it wrote, a declared max_len. The generated wrappers run on it as on
// Scripter.
func Example_scripterFor() {
	spec, err := keyspec.Load("keyspec.yaml")
	if err != nil {
		panic(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("lua"), "lua")
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
