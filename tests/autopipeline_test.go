package tests

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
)

// Generated NewScripts on go-redis auto-pipeliners: a bare *redis.AutoPipeliner
// is refused (its database cannot be checked), runtime.AutoPipeline of a DB1
// client is refused as DB0, and the right one runs the typed wrappers.
func TestGeneratedScriptsOnAutoPipeline(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	db0, db1 := srv.Client(vm1.DB0), srv.Client(vm1.DB1)
	bare, err := db0.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vm1.NewScripts(vm1.Clients{DB0: bare}); !errors.Is(err, runtime.ErrUncheckedDB) {
		t.Fatalf("NewScripts on a bare AutoPipeliner: %v, want ErrUncheckedDB", err)
	}
	ap1, err := runtime.AutoPipeline(db1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vm1.NewScripts(vm1.Clients{DB0: ap1}); !errors.Is(err, runtime.ErrWrongDB) {
		t.Fatalf("NewScripts with DB1's auto-pipeliner as DB0: %v, want ErrWrongDB", err)
	}
	ap0, err := runtime.AutoPipeline(db0, nil)
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: ap0, DB1: ap1})
	if err != nil {
		t.Fatal(err)
	}
	key, err := vm1.NewAPIRLDialogKey("0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", 60)
	if err != nil {
		t.Fatal(err)
	}
	args := vm1.RateLimitFixedArgs{Limit: 2, Window: time.Minute, Cost: 1}
	for i, want := range []bool{true, true, false} {
		d, err := scripts.RateLimitFixed(ctx, key, args)
		if err != nil || d.Allowed != want {
			t.Fatalf("call %d through the auto-pipeline: %+v %v, want allowed=%v", i, d, err, want)
		}
	}
	if n, err := db1.Exists(ctx, key.String()).Result(); err != nil || n != 0 {
		t.Fatalf("the bucket landed in DB1: %d %v", n, err)
	}
}
