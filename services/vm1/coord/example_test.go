package coord_test

import (
	"context"
	"fmt"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/services/vm1/coord"
	"github.com/redis/go-redis/v9"
)

// Run a delivery under its lock: the lease is extended while the work runs, the
// work's context ends if the lease is lost, and the fencing token goes with the
// side effect so a stale holder's write can be refused.
func ExampleLocker_Do() {
	ctx := context.Background()
	db1 := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380", DB: vm1.DB1})
	scripts, err := vm1.NewScripts(vm1.Clients{DB1: db1})
	if err != nil {
		panic(err)
	}
	locker := coord.New(scripts)
	name, err := coord.Delivery("7d1c3a52-2f1e-4c6b-9a0e-5b8f2d4c6e1a")
	if err != nil {
		panic(err)
	}
	err = locker.Do(ctx, name, coord.Options{}, func(ctx context.Context, lk *coord.Lock) error {
		// e.g. UPDATE deliveries SET ..., fence = $1 WHERE id = $2 AND fence < $1
		fmt.Println("deliver with fence", lk.Fence())
		return ctx.Err()
	})
	if err != nil {
		fmt.Println(err)
	}
}
