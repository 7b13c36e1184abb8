// Package pgtest gives a test a schema of its own in the local PostgreSQL
// (127.0.0.1:5432, user postgres, database test, trust auth): a fresh schema with
// a random name, a pool whose search_path is that schema, and the schema dropped
// when the test ends. It never touches another schema. Under -short (go test
// -short runs without PostgreSQL) the tests that need one are skipped.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// URL is the local PostgreSQL the tests use.
const URL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Need skips the test under -short. Schema calls it.
func Need(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL on 127.0.0.1:5432: skipped under -short")
	}
}

// Schema creates a schema, runs each migration in it (twice, so that a migration
// that is not idempotent fails the test), and returns a pool of at most maxConns
// connections (0: 32) whose search_path is the schema. The pool is closed and the
// schema dropped when the test ends. The test fails when PostgreSQL is not
// running (make deps starts it).
func Schema(t testing.TB, maxConns int32, migrations ...string) *pgxpool.Pool {
	t.Helper()
	Need(t)
	ctx := context.Background()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "pgtest_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, URL)
	if err != nil {
		t.Fatalf("PostgreSQL on 127.0.0.1:5432 (make deps starts it; or run go test -short): %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = admin.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		_ = admin.Close(context.Background())
	})
	cfg, err := pgxpool.ParseConfig(URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if maxConns == 0 {
		maxConns = 32
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // before the schema is dropped: cleanups run last-in first-out
	for i, m := range migrations {
		for run := 0; run < 2; run++ {
			if _, err := pool.Exec(ctx, m); err != nil {
				t.Fatalf("migration %d (run %d): %v", i+1, run+1, err)
			}
		}
	}
	return pool
}
