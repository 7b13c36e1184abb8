// Package pgtest gives a test a PostgreSQL schema of its own on the local
// server (127.0.0.1:5432, user postgres, database test, trust auth), dropped
// when the test ends. `make test` starts that server and creates the database.
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

// Need skips the test under -short (go test -short runs without PostgreSQL).
// Schema calls it.
func Need(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL on 127.0.0.1:5432: skipped under -short")
	}
}

// Schema creates a fresh schema named prefix_<random> in database test and
// returns a pool (at most 32 connections) whose search_path is that schema.
// The pool is closed and the schema dropped when the test ends. The test fails
// when PostgreSQL cannot be reached.
func Schema(t testing.TB, prefix string) *pgxpool.Pool {
	t.Helper()
	Need(t)
	ctx := context.Background()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := prefix + "_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, URL)
	if err != nil {
		t.Fatalf("PostgreSQL on 127.0.0.1:5432, database test (make test starts it and creates the database; or run go test -short): %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		_ = admin.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		_ = admin.Close(context.Background())
	})
	cfg, err := pgxpool.ParseConfig(URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 32
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // runs before the schema is dropped (cleanups run last-in first-out)
	return pool
}
