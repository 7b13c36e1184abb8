package inbox_test

import (
	"bytes"
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
	"github.com/hanchat/luagen/services/degraded"
	"github.com/hanchat/luagen/services/vm1/inbox"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/hanchat/luagen/services/vm1/ratelimit"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// env is an Inbox on a real redis-server (rate limits in DB0, notifications on
// Pub/Sub) and a PostgreSQL schema of its own.
type env struct {
	srv  *redistest.Server
	pool *pgxpool.Pool
	in   *inbox.Inbox
	reg  *prometheus.Registry
}

func newEnv(t *testing.T, policy degraded.Policy) *env {
	t.Helper()
	srv := redistest.Start(t)
	short := func(db int) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, DB: db, MaxRetries: -1,
			DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: short(vm1.DB0)})
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := ratelimit.New(scripts, ratelimit.Policy{
		vm1.APIRouteInternalInbox: {Algorithm: ratelimit.TokenBucket, Degraded: policy, Limits: []ratelimit.Limit{
			{Scope: ratelimit.ScopeService, Limit: 1000000, Window: time.Hour},
		}},
	}, ratelimit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	contract, err := pubsub.NewContract(inbox.EventReceived)
	if err != nil {
		t.Fatal(err)
	}
	pub := pubsub.NewPublisher(short(vm1.DB1), contract)
	pool := pgtest.Schema(t, 32)
	reg := prometheus.NewRegistry()
	in, err := inbox.New(pool, limiter, inbox.Options{Publisher: pub, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, pool: pool, in: in, reg: reg}
}

// sent is one item a sender got a Receipt for.
type sent struct {
	item    inbox.Item
	receipt inbox.Receipt
}

// Senders deliver items while Redis hangs (SIGSTOP) and dies and comes back,
// again and again. A sender retries an item until it gets a Receipt, as a real
// sender does. No item is lost (seed 000 §10): every item has exactly one
// receipt row in PostgreSQL with the content sent, whether the inbox route fails
// open through an outage (the receipts say degraded) or fails closed (the
// deliveries answer ErrUnavailable until Redis is back, and nothing is
// acknowledged meanwhile).
func TestRedisOutageDuringDeliveryLosesNoItem(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy degraded.Policy
	}{{"fail-open route", degraded.FailOpen}, {"fail-closed route", degraded.FailClosed}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			e := newEnv(t, tc.policy)
			const senders, each = 8, 150
			var attempts, unavailable, degradedAcks, duplicates atomic.Int64
			results := make([][]sent, senders)
			var wg sync.WaitGroup
			for s := 0; s < senders; s++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each && ctx.Err() == nil; i++ {
						it := inbox.Item{Service: "bitrix-sync", DeliveryID: uuid.NewString(), Kind: "bitrix.deal.updated",
							RecipientID: uuid.NewString(), Payload: fmt.Appendf(nil, `{"sender":%d,"n":%d}`, s, i)}
						for ctx.Err() == nil {
							attempts.Add(1)
							dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
							r, err := e.in.Deliver(dctx, it)
							dcancel()
							if err == nil {
								if r.Degraded {
									degradedAcks.Add(1)
								}
								if r.Duplicate {
									duplicates.Add(1)
								}
								results[s] = append(results[s], sent{item: it, receipt: r})
								break
							}
							if errors.Is(err, inbox.ErrUnavailable) {
								unavailable.Add(1)
							} else if !errors.Is(err, context.DeadlineExceeded) {
								t.Errorf("deliver: %v", err)
								return
							}
							// Not acknowledged: the sender keeps the item and retries.
							select {
							case <-ctx.Done():
							case <-time.After(5 * time.Millisecond):
							}
						}
					}
				}()
			}
			finished := make(chan struct{})
			go func() { wg.Wait(); close(finished) }()

			faults := 0
			during := func() bool {
				// Let a few deliveries meet the fault (or the senders finish).
				from := attempts.Load()
				return redistest.WaitFor(ctx, 3*time.Second, func() bool {
					select {
					case <-finished:
						return true
					default:
						return attempts.Load() >= from+30
					}
				})
			}
			for running := true; running; {
				select {
				case <-finished:
					running = false
					continue
				default:
				}
				if faults%2 == 0 {
					e.srv.Pause()
					during()
					e.srv.Resume()
				} else {
					e.srv.Kill()
					during()
					e.srv.Restart()
				}
				faults++
				redistest.WaitFor(ctx, 200*time.Millisecond, func() bool { return false }) // Redis up for a while
			}
			if ctx.Err() != nil {
				t.Fatal("the senders did not finish")
			}

			var all []sent
			for _, rs := range results {
				all = append(all, rs...)
			}
			if len(all) != senders*each {
				t.Fatalf("%d items acknowledged, want %d", len(all), senders*each)
			}
			rows, err := e.pool.Query(ctx, `SELECT delivery_id::text, count(*), (array_agg(payload))[1] FROM inbox_receipts GROUP BY delivery_id`)
			if err != nil {
				t.Fatal(err)
			}
			stored := map[string][]byte{}
			for rows.Next() {
				var id string
				var n int
				var payload []byte
				if err := rows.Scan(&id, &n, &payload); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("delivery %s has %d receipts", id, n)
				}
				stored[id] = payload
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			for _, s := range all {
				if p, ok := stored[s.item.DeliveryID]; !ok || !bytes.Equal(p, s.item.Payload) {
					t.Errorf("acknowledged item %s is not stored as sent (found %v)", s.item.DeliveryID, ok)
				}
			}
			if len(stored) != len(all) {
				t.Errorf("%d receipts stored for %d items", len(stored), len(all))
			}
			dropped := resultCount(t, e.reg, "han_api_inbox_notifications_total", "dropped")
			t.Logf("%d faults; %d attempts for %d items: %d answered unavailable, %d acknowledged as degraded, %d as duplicates; %v notifications dropped",
				faults, attempts.Load(), len(all), unavailable.Load(), degradedAcks.Load(), duplicates.Load(), dropped)
			if faults == 0 || dropped == 0 {
				t.Fatalf("no delivery met an outage (%d faults, %v notifications dropped): the test proved nothing", faults, dropped)
			}
			switch tc.policy {
			case degraded.FailOpen:
				if degradedAcks.Load() == 0 || unavailable.Load() != 0 {
					t.Fatalf("fail-open: %d degraded receipts, %d unavailable answers; want some of the first, none of the second", degradedAcks.Load(), unavailable.Load())
				}
			case degraded.FailClosed:
				if unavailable.Load() == 0 || degradedAcks.Load() != 0 {
					t.Fatalf("fail-closed: %d unavailable answers, %d degraded receipts; want some of the first, none of the second", unavailable.Load(), degradedAcks.Load())
				}
			}
		})
	}
}

// resultCount is the value of name{result=value} in reg.
func resultCount(t *testing.T, reg *prometheus.Registry, name, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "result" && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{result=%q}", name, value)
	return 0
}

// A retry of an acknowledged item is answered from its receipt as a duplicate,
// a delivery id reused with other content is a conflict, and a malformed item is
// refused: none of them writes a second row.
func TestRetriesDuplicatesAndConflicts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, degraded.FailClosed)
	it := inbox.Item{Service: "bitrix-sync", DeliveryID: uuid.NewString(), Kind: "bitrix.deal.updated", RecipientID: uuid.NewString(), Payload: []byte(`{"a":1}`)}
	first, err := e.in.Deliver(ctx, it)
	if err != nil || first.Duplicate || first.Degraded || !first.Notified {
		t.Fatalf("first delivery: %+v %v", first, err)
	}
	again, err := e.in.Deliver(ctx, it)
	if err != nil || !again.Duplicate || again.ID != first.ID || !again.ReceivedAt.Equal(first.ReceivedAt) || again.Notified {
		t.Fatalf("retry: %+v %v, want the first receipt as a duplicate", again, err)
	}
	other := it
	other.Payload = []byte(`{"a":2}`)
	if _, err := e.in.Deliver(ctx, other); !errors.Is(err, inbox.ErrConflict) {
		t.Fatalf("other content under the same id: %v", err)
	}
	for name, bad := range map[string]inbox.Item{
		"service":   {Service: "bitrix:sync", DeliveryID: uuid.NewString(), Kind: "k", RecipientID: uuid.NewString()},
		"delivery":  {Service: "s", DeliveryID: "not-a-uuid", Kind: "k", RecipientID: uuid.NewString()},
		"kind":      {Service: "s", DeliveryID: uuid.NewString(), Kind: "Bad Kind", RecipientID: uuid.NewString()},
		"recipient": {Service: "s", DeliveryID: uuid.NewString(), Kind: "k", RecipientID: "0B7F9A4E-51C2-4D8E-A3F6-2C9D8E7B1A05"},
		"payload":   {Service: "s", DeliveryID: uuid.NewString(), Kind: "k", RecipientID: uuid.NewString(), Payload: make([]byte, inbox.MaxPayload+1)},
	} {
		if _, err := e.in.Deliver(ctx, bad); !errors.Is(err, inbox.ErrInvalidItem) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM inbox_receipts`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows (%v), want 1", n, err)
	}
}
