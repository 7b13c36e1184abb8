package coord_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/vm1/coord"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// effectsTable is the side effect the workers under test produce. It has no
// unique constraint on purpose: only the leases may keep the work single.
const effectsTable = `CREATE TABLE IF NOT EXISTS effects (id bigserial PRIMARY KEY, name text NOT NULL, fence bigint NOT NULL)`

func leaseStore(t *testing.T, pool *pgxpool.Pool) *coord.LeaseStore {
	t.Helper()
	s := coord.NewLeaseStore(pool)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func locker(t *testing.T, rdb *redis.Client) *coord.Locker {
	t.Helper()
	scripts, err := vm1.NewScripts(vm1.Clients{DB1: rdb})
	if err != nil {
		t.Fatal(err)
	}
	return coord.New(scripts)
}

// tally counts what the workers saw.
type tally struct {
	done, redisHeld, leaseHeld, other atomic.Int64
	overlaps                          atomic.Int64 // fn running twice at once for one name
	withoutRedis                      atomic.Int64 // fn ran under the row lease alone
}

// runWorkers runs workers goroutines that each go over names, again and again,
// until every name's effect is written or ctx ends. The work checks (without
// any lock of its own) whether the effect exists, works for a while, and writes
// the effect in a transaction fenced by the row lease: only the leases keep two
// workers from doing it twice.
func runWorkers(ctx context.Context, t *testing.T, l *coord.Locker, leases *coord.LeaseStore, pool *pgxpool.Pool, names []coord.Name, workers int, work time.Duration, o coord.LeasedOptions) *tally {
	t.Helper()
	var tl tally
	inFlight := make([]atomic.Int32, len(names))
	remaining := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT $1::int - count(DISTINCT name) FROM effects`, len(names)).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && remaining() > 0 {
				for i, name := range names {
					err := l.DoLeased(ctx, name, leases, o, func(ctx context.Context, g *coord.Guard) error {
						if inFlight[i].Add(1) > 1 {
							tl.overlaps.Add(1)
						}
						defer inFlight[i].Add(-1)
						if !g.RedisLocked() {
							tl.withoutRedis.Add(1)
						}
						var exists bool
						if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM effects WHERE name = $1)`, name.Key()).Scan(&exists); err != nil || exists {
							return err
						}
						time.Sleep(work) // the work itself
						tx, err := pool.Begin(ctx)
						if err != nil {
							return err
						}
						defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
						if err := g.Verify(ctx, tx); err != nil {
							return err
						}
						if _, err := tx.Exec(ctx, `INSERT INTO effects (name, fence) VALUES ($1, $2)`, name.Key(), g.Fence()); err != nil {
							return err
						}
						return tx.Commit(ctx)
					})
					switch {
					case err == nil:
						tl.done.Add(1)
					case errors.Is(err, coord.ErrLeaseHeld):
						tl.leaseHeld.Add(1)
					case errors.Is(err, coord.ErrNotObtained):
						tl.redisHeld.Add(1)
					case ctx.Err() == nil:
						tl.other.Add(1)
						t.Errorf("DoLeased: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	return &tl
}

// checkSingle fails unless every name has exactly one effect and no work ran
// twice at once.
func checkSingle(t *testing.T, pool *pgxpool.Pool, names []coord.Name, tl *tally) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT name, count(*) FROM effects GROUP BY name`)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		counts[name] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if counts[n.Key()] != 1 {
			t.Errorf("%s: %d effects, want exactly 1", n.Key(), counts[n.Key()])
		}
	}
	if len(counts) != len(names) {
		t.Errorf("%d names have effects, want %d", len(counts), len(names))
	}
	if tl.overlaps.Load() != 0 {
		t.Errorf("the work of one name ran twice at once %d times", tl.overlaps.Load())
	}
}

func deliveries(t *testing.T, n int) []coord.Name {
	t.Helper()
	names := make([]coord.Name, n)
	for i := range names {
		var err error
		if names[i], err = coord.Delivery(uuid.NewString()); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// Redis loses locks while workers hold them, by DEL (as an eviction would) and by
// restarts without persistence, and is hung for a while: many workers contending
// for the same names then get the Redis lock (or no answer from Redis) while
// another worker still works, and the PostgreSQL row lease alone keeps the work
// single: every name's effect is written exactly once, and no work ever runs
// twice at once (seed 000 §6).
func TestRowLeaseKeepsWorkSingleWhenRedisLosesTheLock(t *testing.T) {
	const workers = 16
	t.Run("DEL", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		srv := redistest.Start(t)
		rdb := srv.Client(vm1.DB1)
		pool := pgtest.Schema(t, 48, effectsTable)
		leases, l := leaseStore(t, pool), locker(t, rdb)
		names := deliveries(t, 30)
		stop := make(chan struct{})
		var deleted atomic.Int64
		chaos := make(chan struct{})
		go func() {
			defer close(chaos)
			admin := srv.Client(vm1.DB1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				keys, _ := admin.Keys(ctx, vm1.CoordLockDeliveryPattern).Result()
				if len(keys) > 0 {
					n, _ := admin.Del(ctx, keys...).Result()
					deleted.Add(n)
				}
			}
		}()
		tl := runWorkers(ctx, t, l, leases, pool, names, workers, 3*time.Millisecond, coord.LeasedOptions{TTL: 10 * time.Second})
		close(stop)
		<-chaos
		checkSingle(t, pool, names, tl)
		t.Logf("done %d, Redis said held %d, row lease said held %d; %d lock keys deleted under their holders",
			tl.done.Load(), tl.redisHeld.Load(), tl.leaseHeld.Load(), deleted.Load())
		if deleted.Load() == 0 || tl.leaseHeld.Load() == 0 {
			t.Fatalf("Redis never lost a held lock to a contender (%d deleted, %d refused by the row lease): the test proved nothing", deleted.Load(), tl.leaseHeld.Load())
		}
	})

	t.Run("restart without persistence", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		srv := redistest.Start(t)
		rdb := srv.Client(vm1.DB1, func(o *redis.Options) {
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond, -1
		})
		pool := pgtest.Schema(t, 48, effectsTable)
		leases, l := leaseStore(t, pool), locker(t, rdb)
		names := deliveries(t, 30)
		admin := srv.Client(vm1.DB1, func(o *redis.Options) { o.MaxRetries = -1 })
		lockKeys := make([]string, len(names))
		for i, n := range names {
			lockKeys[i] = n.Key()
		}
		var tl *tally
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			tl = runWorkers(ctx, t, l, leases, pool, names, workers, 20*time.Millisecond, coord.LeasedOptions{TTL: 10 * time.Second, RedisTimeout: 200 * time.Millisecond})
		}()
		restarts := 0
		for running := true; running; {
			select {
			case <-finished:
				running = false
			default:
				// Once a worker holds a lock, lose them all.
				redistest.WaitFor(ctx, time.Second, func() bool {
					n, err := admin.Exists(ctx, lockKeys...).Result()
					return err == nil && n > 0
				})
				srv.Kill()
				srv.Restart()
				restarts++
			}
		}
		checkSingle(t, pool, names, tl)
		t.Logf("%d restarts; done %d, Redis said held %d, row lease said held %d, work without Redis %d",
			restarts, tl.done.Load(), tl.redisHeld.Load(), tl.leaseHeld.Load(), tl.withoutRedis.Load())
		if restarts == 0 || tl.leaseHeld.Load() == 0 {
			t.Fatalf("no contender got past a restarted Redis (%d restarts, %d refused by the row lease): the test proved nothing", restarts, tl.leaseHeld.Load())
		}
	})

	t.Run("hung Redis", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rdb := redis.NewClient(&redis.Options{Addr: redistest.Hung(t), DB: vm1.DB1, MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = rdb.Close() })
		pool := pgtest.Schema(t, 48, effectsTable)
		leases, l := leaseStore(t, pool), locker(t, rdb)
		names := deliveries(t, 8)
		tl := runWorkers(ctx, t, l, leases, pool, names, workers, 3*time.Millisecond, coord.LeasedOptions{TTL: 10 * time.Second, RedisTimeout: 20 * time.Millisecond})
		checkSingle(t, pool, names, tl)
		if tl.withoutRedis.Load() == 0 || tl.withoutRedis.Load() != tl.done.Load() || tl.leaseHeld.Load() == 0 {
			t.Fatalf("with Redis hung: %d done, %d without Redis, %d refused by the row lease; want every run without Redis and some refused",
				tl.done.Load(), tl.withoutRedis.Load(), tl.leaseHeld.Load())
		}
	})
}

// A holder whose row lease ran out and was taken over is fenced off: its
// transaction's Verify fails with ErrLeaseLost (its write is rolled back), it can
// neither extend nor release, while the new holder, with a larger fence, writes;
// a third claimer is refused while the new lease runs.
func TestRowLeaseFencingRefusesAStaleHolder(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Schema(t, 8, effectsTable)
	leases := leaseStore(t, pool)
	name, err := coord.SafetyRecovery(uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	a, err := leases.Acquire(ctx, name, "owner-a", 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Acquire(ctx, name, "owner-b", time.Minute); !errors.Is(err, coord.ErrLeaseHeld) {
		t.Fatalf("a second owner during the lease: %v", err)
	}
	if !redistest.WaitFor(ctx, 10*time.Second, func() bool {
		var over bool
		err := pool.QueryRow(ctx, `SELECT lease_until <= clock_timestamp() FROM coord_leases WHERE name = $1`, name.Key()).Scan(&over)
		return err == nil && over
	}) {
		t.Fatal("the lease did not run out")
	}
	b, err := leases.Acquire(ctx, name, "owner-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b.Fence() != a.Fence()+1 {
		t.Fatalf("fences %d then %d, want one more", a.Fence(), b.Fence())
	}
	write := func(l *coord.RowLease) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if err := l.Verify(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO effects (name, fence) VALUES ($1, $2)`, name.Key(), l.Fence()); err != nil {
			t.Fatal(err)
		}
		return tx.Commit(ctx)
	}
	if err := write(a); !errors.Is(err, coord.ErrLeaseLost) {
		t.Fatalf("the stale holder's write: %v", err)
	}
	if err := write(b); err != nil {
		t.Fatal(err)
	}
	var n int
	var fence int64
	if err := pool.QueryRow(ctx, `SELECT count(*), max(fence) FROM effects`).Scan(&n, &fence); err != nil || n != 1 || fence != b.Fence() {
		t.Fatalf("effects: %d rows, fence %d (%v); want only the new holder's", n, fence, err)
	}
	if err := a.Extend(ctx); !errors.Is(err, coord.ErrLeaseLost) {
		t.Fatalf("the stale holder extended: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, coord.ErrLeaseLost) {
		t.Fatalf("the stale holder released: %v", err)
	}
	if _, err := leases.Acquire(ctx, name, "owner-c", time.Minute); !errors.Is(err, coord.ErrLeaseHeld) {
		t.Fatalf("a third owner during the new lease: %v", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := leases.Acquire(ctx, name, "owner-c", time.Minute)
	if err != nil || c.Fence() != b.Fence()+1 {
		t.Fatalf("after the release: %v, fence %v", err, c)
	}
}

// When the row lease is taken over while the work runs, DoLeased cancels the
// work's context with ErrLeaseLost as its cause and returns that loss.
func TestDoLeasedCancelsTheWorkWhenTheRowLeaseIsLost(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	pool := pgtest.Schema(t, 8)
	leases, l := leaseStore(t, pool), locker(t, srv.Client(vm1.DB1))
	name, err := coord.SettingsRefresh("api-1")
	if err != nil {
		t.Fatal(err)
	}
	var cause error
	err = l.DoLeased(ctx, name, leases, coord.LeasedOptions{TTL: 3 * time.Second, ExtendEvery: 20 * time.Millisecond}, func(ctx context.Context, g *coord.Guard) error {
		if !g.RedisLocked() {
			return errors.New("the Redis lock was not taken")
		}
		// Another process takes the row over (as after a pause past the lease).
		if _, err := pool.Exec(ctx, `UPDATE coord_leases SET owner = 'thief', fence = fence + 1 WHERE name = $1`, name.Key()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("the work was not cancelled")
		}
	})
	if !errors.Is(cause, coord.ErrLeaseLost) || !errors.Is(err, coord.ErrLeaseLost) {
		t.Fatalf("cause %v, DoLeased %v; want ErrLeaseLost", cause, err)
	}
	var owner string
	if err := pool.QueryRow(ctx, `SELECT owner FROM coord_leases WHERE name = $1`, name.Key()).Scan(&owner); err != nil || owner != "thief" {
		t.Fatalf("the lease now belongs to %q (%v); the loser must leave it alone", owner, err)
	}
}
