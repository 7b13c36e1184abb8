package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/idemtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/internal/scripttest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/services/secrets"
	"github.com/hanchat/luagen/services/vm1/idempotency"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// testHMACKey hashes Idempotency-Keys in tests; a real service reads its secret from config.
var testHMACKey, _ = secrets.NewHMACKey([]byte("test-only secret, 32 bytes or more, never in production"))

// idemEnv is one Keeper on its own redis-server and PostgreSQL schema.
type idemEnv struct {
	srv    *redistest.Server
	db0    *redis.Client
	pool   *pgxpool.Pool
	keeper *idempotency.Keeper
	reg    *prometheus.Registry
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
	pool := idemtest.Postgres(t)
	reg := prometheus.NewRegistry()
	k, err := idempotency.New(scripts, idempotency.NewStore(pool), testHMACKey, idempotency.Options{Registerer: reg, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if srv.Running() {
			scripttest.AuditTTLs(t, db0, vm1.Keys)
		}
	})
	return &idemEnv{srv: srv, db0: db0, pool: pool, keeper: k, reg: reg}
}

// sideEffects counts the committed side effects of key.
func (e *idemEnv) sideEffects(t *testing.T, key string) int {
	t.Helper()
	return idemtest.SideEffects(t, e.pool, key)
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
