package tests

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// testPostgresURL is the local PostgreSQL the tests use (trust auth); each test
// works in a schema of its own that it creates and drops.
const testPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// idemPostgres creates a fresh schema in database test, migrates it, adds a
// side_effects table the calls under test write to, and returns a pool whose
// search_path is that schema. The schema is dropped when the test ends.
func idemPostgres(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "idem_test_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, testPostgresURL)
	if err != nil {
		t.Fatalf("PostgreSQL on 127.0.0.1:5432 (pg_ctlcluster --skip-systemctl-redirect 15 main start): %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		_ = admin.Close(context.Background())
	})
	cfg, err := pgxpool.ParseConfig(testPostgresURL)
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
	if err := idempotency.NewStore(pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := idempotency.NewStore(pool).Migrate(ctx); err != nil {
		t.Fatalf("the migration is not idempotent: %v", err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE side_effects (id bigserial PRIMARY KEY, idem_key text NOT NULL, owner text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return pool
}

// idemEnv is one Keeper on its own redis-server and PostgreSQL schema.
type idemEnv struct {
	srv     *redistest.Server
	db0     *redis.Client
	pool    *pgxpool.Pool
	keeper  *idempotency.Keeper
	metrics *idempotency.Metrics
	reg     *prometheus.Registry
}

func newIdemEnv(t *testing.T, lease time.Duration, opts ...redistest.Option) *idemEnv {
	t.Helper()
	srv := redistest.Start(t, opts...)
	// No retries and one dial attempt: a stopped server fails fast.
	db0 := srv.Client(vm1.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.DialerRetries = 1; o.PoolSize = 64 })
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: db0})
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.Preload(context.Background(), db0, vm1.AllScripts()...); err != nil {
		t.Fatal(err)
	}
	pool := idemPostgres(t)
	reg := prometheus.NewRegistry()
	m, err := idempotency.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	k, err := idempotency.New(idempotency.Config{Scripts: scripts, Store: idempotency.NewStore(pool), KeyHMAC: testHMACKey, Metrics: m, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	e := &idemEnv{srv: srv, db0: db0, pool: pool, keeper: k, metrics: m, reg: reg}
	t.Cleanup(func() {
		if srv.Running() {
			auditTTLs(t, db0, vm1.Keys)
		}
	})
	return e
}

// sideEffects counts the committed side effects of key.
func (e *idemEnv) sideEffects(t *testing.T, key string) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM side_effects WHERE idem_key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// durableState is the durable row's state, "" when there is none.
func (e *idemEnv) durableState(t *testing.T, req idempotency.Request) string {
	t.Helper()
	var state string
	err := e.pool.QueryRow(context.Background(), `SELECT state FROM idempotency_records WHERE scope = $1 AND user_id = $2::uuid AND key_hmac = $3`,
		string(req.Scope), req.UserID, string(testHMACKey.Sum(req.Key))).Scan(&state)
	if err == pgx.ErrNoRows {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// counter counts a call's executions and writes one side effect row per run in
// the call's transaction.
type counter struct {
	runs atomic.Int64
}

func (c *counter) call(key string, resp idempotency.Response, before func(context.Context) error) idempotency.Func {
	return func(ctx context.Context, tx pgx.Tx) (idempotency.Response, error) {
		c.runs.Add(1)
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

func idemRequest(t *testing.T, scope vm1.IdemScope, body string) idempotency.Request {
	t.Helper()
	return idempotency.Request{Scope: scope, UserID: uuid(t), Key: "client-key-" + nonce(t), Fingerprint: idempotency.Fingerprint([]byte("POST"), []byte("/v1/messages"), []byte(body))}
}

// testCtx bounds a test's calls, so a regression fails the test instead of
// hanging it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
