package outbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// env is one test's PostgreSQL schema, redis-server and deployment prefix.
type env struct {
	db      *pgxpool.Pool
	srv     *redistest.Server
	rdb     *redis.Client
	prefix  elang.Prefix
	scripts *elang.Scripts
	stream  string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	redistest.Need(t)
	e := &env{db: pgtest.Schema(t, 40, Migration), srv: redistest.Start(t)}
	e.rdb = e.srv.Client(elang.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.PoolSize = 8; o.ContextTimeoutEnabled = true })
	e.prefix, e.scripts = bind(t, e.rdb, "elang-outbox:", true)
	e.stream = e.prefix.String() + "outbox:stream"
	return e
}

func bind(t testing.TB, rdb redis.Scripter, prefix string, test bool) (elang.Prefix, *elang.Scripts) {
	t.Helper()
	p, err := elang.NewPrefix(prefix)
	if err == nil && test {
		p, err = p.Test()
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := elang.NewScripts(elang.Clients{DB0: rdb}, elang.WithPrefix(p))
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

func (e *env) relay(o Options) *Relay {
	return NewRelay(e.db, e.rdb, e.scripts, e.prefix, o)
}

// tx runs f in a transaction and commits it, or rolls it back when rollback is set.
func (e *env) tx(t testing.TB, rollback bool, f func(tx pgx.Tx) error) {
	t.Helper()
	ctx := context.Background()
	tx, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatal(err)
	}
	if rollback {
		err = tx.Rollback(ctx)
	} else {
		err = tx.Commit(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// publish commits n events to channel, one transaction.
func (e *env) publish(t testing.TB, channel string, n int) {
	t.Helper()
	e.tx(t, false, func(tx pgx.Tx) error {
		for i := 0; i < n; i++ {
			if _, err := (Events{}).Publish(context.Background(), tx, channel, []byte(fmt.Sprintf("payload %d", i))); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) count(t testing.TB, query string) int64 {
	t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// entry is one stream entry's fields.
type entry struct {
	id, messageID, kind, channel string
	ref                          int64
}

func (e *env) entries(t testing.TB) []entry {
	t.Helper()
	msgs, err := e.srv.Admin().XRange(context.Background(), e.stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]entry, len(msgs))
	for i, m := range msgs {
		var ref int64
		if _, err := fmt.Sscan(fmt.Sprint(m.Values["ref"]), &ref); err != nil {
			t.Fatalf("entry %s: ref %v", m.ID, m.Values["ref"])
		}
		out[i] = entry{id: m.ID, messageID: fmt.Sprint(m.Values["message_id"]), kind: fmt.Sprint(m.Values["kind"]), channel: fmt.Sprint(m.Values["channel"]), ref: ref}
	}
	return out
}

// waitFor fails the test unless cond holds within d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !redistest.WaitFor(context.Background(), d, cond) {
		t.Fatalf("not within %s: %s", d, what)
	}
}
