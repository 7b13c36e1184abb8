// Package idemtest is what tests of idempotent calls share: a migrated
// PostgreSQL schema with a side_effects table the calls under test write to, a
// call that counts its runs, and requests with fresh keys.
package idemtest

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres returns a pool on a fresh schema (internal/pgtest) with the
// idempotency migration applied (twice: it must be idempotent) and a table
// side_effects (id, idem_key, owner) the calls under test write to.
func Postgres(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Schema(t, 32)
	for i := 0; i < 2; i++ {
		if err := idempotency.NewStore(pool).Migrate(ctx); err != nil {
			t.Fatalf("migration, run %d (it must be idempotent): %v", i+1, err)
		}
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE side_effects (id bigserial PRIMARY KEY, idem_key text NOT NULL, owner text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return pool
}

// SideEffects counts the committed side effects of the idempotency key.
func SideEffects(t testing.TB, pool *pgxpool.Pool, key string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM side_effects WHERE idem_key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Counter counts a call's executions; each run writes one side_effects row in
// the call's transaction.
type Counter struct {
	Runs atomic.Int64
}

// Call is an idempotency.Func that counts its run, runs before (when not nil;
// its error ends the call), writes one side effect for key and answers resp.
func (c *Counter) Call(key string, resp idempotency.Response, before func(context.Context) error) idempotency.Func {
	return func(ctx context.Context, tx pgx.Tx) (idempotency.Response, error) {
		c.Runs.Add(1)
		if before != nil {
			if err := before(ctx); err != nil {
				return idempotency.Response{}, err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO side_effects (idem_key, owner) VALUES ($1, 'x')`, key); err != nil {
			return idempotency.Response{}, err
		}
		return resp, nil
	}
}

// Request is a request of scope by a new user with a new Idempotency-Key,
// fingerprinted as a POST of body.
func Request(t testing.TB, scope vm1.IdemScope, body string) idempotency.Request {
	t.Helper()
	return idempotency.Request{
		Scope: scope, UserID: uuid.NewString(), Key: "client-key-" + scripttest.Nonce(t),
		Fingerprint: idempotency.Fingerprint([]byte("POST"), []byte("/v1/messages"), []byte(body)),
	}
}

// Created is the answer of a call that created a resource: 201, a new
// resource id, a Location header the allow-list keeps and a Set-Cookie it
// drops.
func Created() idempotency.Response {
	return idempotency.Response{Status: 201, ResourceID: uuid.NewString(), Header: http.Header{
		"Location":   {"/v1/messages/x"},
		"Set-Cookie": {"session=never-stored"},
	}}
}
