package rediscmd_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"testing"

	"github.com/aymanbagabas/go-udiff"
	"github.com/hanchat/luagen/gen/rediscmd"
	"github.com/hanchat/luagen/gen/rediscmd/internal/tablegen"
	"github.com/hanchat/luagen/internal/redistest"
)

var update = flag.Bool("update", false, "rewrite table.go from the redis-server on PATH")

// The committed table is exactly what the redis-server on PATH says about its
// commands; -update rewrites it (make commands).
func TestTableMatchesServer(t *testing.T) {
	srv := redistest.Start(t)
	version, cmds, err := tablegen.Read(context.Background(), srv.Client(0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tablegen.Render(version, cmds)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("table.go", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("table.go (from redis-server %s) differs from redis-server %s on PATH; run make commands and review the diff:\n%s",
			rediscmd.ServerVersion, version, udiff.Unified("table.go", "server", string(want), string(got)))
	}
}
