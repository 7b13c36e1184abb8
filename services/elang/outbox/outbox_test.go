package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/promtest"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// A rolled-back transaction leaves no event, job, channel id or outbox row; a
// committed one leaves exactly its rows, and the channel's next id follows the
// committed ones only.
func TestRollbackLeavesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.tx(t, true, func(tx pgx.Tx) error {
		if _, err := (Events{}).Publish(ctx, tx, "report:42", []byte("draft")); err != nil {
			return err
		}
		_, err := (Queue{}).Push(ctx, tx, "mail", []byte("job"))
		return err
	})
	for _, tbl := range []string{"elang_outbox", "elang_events", "elang_jobs", "elang_event_channels"} {
		if n := e.count(t, "SELECT count(*) FROM "+tbl); n != 0 {
			t.Fatalf("%s has %d rows after a rollback", tbl, n)
		}
	}
	var ev Event
	e.tx(t, false, func(tx pgx.Tx) (err error) {
		ev, err = (Events{}).Publish(ctx, tx, "report:42", []byte("final"))
		return err
	})
	if ev.ID != 1 {
		t.Fatalf("first committed event of the channel has id %d, want 1 (the rolled-back one took none)", ev.ID)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL AND kind = 'event' AND channel = 'report:42' AND ref = 1"); n != 1 {
		t.Fatalf("pending outbox rows of the committed event: %d, want 1", n)
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.tx(t, false, func(tx pgx.Tx) error {
		for _, name := range []string{"", "bad name", "a*b", "x{1}", strings.Repeat("a", MaxNameLen+1)} {
			if _, err := (Events{}).Publish(ctx, tx, name, nil); !errors.Is(err, ErrInvalid) {
				return fmt.Errorf("channel %q: %v, want ErrInvalid", name, err)
			}
			if _, err := (Queue{}).Push(ctx, tx, name, nil); !errors.Is(err, ErrInvalid) {
				return fmt.Errorf("queue %q: %v, want ErrInvalid", name, err)
			}
		}
		if _, err := (Events{}).Publish(ctx, tx, "c", make([]byte, MaxPayload+1)); !errors.Is(err, ErrInvalid) {
			return fmt.Errorf("oversized payload: %v, want ErrInvalid", err)
		}
		return nil
	})
	// The table refuses what the relay's script would refuse, so no row written
	// around the API can stall the relay.
	for _, q := range []string{
		"INSERT INTO elang_outbox (kind, channel, ref) VALUES ('event', 'bad name', 1)",
		"INSERT INTO elang_outbox (kind, channel, ref) VALUES ('event', repeat('a', 129), 1)",
		"INSERT INTO elang_outbox (kind, channel, ref) VALUES ('mail', 'c', 1)",
		"INSERT INTO elang_outbox (kind, channel, ref) VALUES ('job', 'c', 0)",
	} {
		if _, err := e.db.Exec(context.Background(), q); err == nil {
			t.Fatalf("%s was accepted", q)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM elang_outbox"); n != 0 {
		t.Fatalf("%d outbox rows after refused input", n)
	}
}

// The relay marks a row only after Redis accepted it: with Redis down a pass fails,
// marks nothing and the pending metric counts every row; once Redis is up one Drain
// publishes them all in id order.
func TestRelayMarksOnlyAfterRedisAccepted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, "orders", 30)
	reg := prometheus.NewPedanticRegistry()
	r := e.relay(Options{Batch: 7, Registerer: reg})
	e.srv.Kill()
	if _, err := r.Dispatch(ctx); !errors.Is(err, ErrRedis) {
		t.Fatalf("pass with Redis down: %v, want ErrRedis", err)
	}
	if n, err := r.Pending(ctx); err != nil || n != 30 {
		t.Fatalf("pending with Redis down: %d %v, want 30", n, err)
	}
	if got := promtest.Value(t, reg, "elang_outbox_pending", nil); got != 30 {
		t.Fatalf("elang_outbox_pending = %v, want 30", got)
	}
	e.srv.Restart()
	var passes int
	total, err := r.Drain(ctx, func(Pass) { passes++ })
	if err != nil {
		t.Fatal(err)
	}
	if total.Read != 30 || total.Appended != 30 || total.Deduplicated != 0 || passes != 5 {
		t.Fatalf("drain: %+v in %d progress calls, want 30 appended in 5 passes of at most 7", total, passes)
	}
	if got := promtest.Value(t, reg, "elang_outbox_pending", nil); got != 0 {
		t.Fatalf("elang_outbox_pending after the drain = %v, want 0", got)
	}
	if got := promtest.Value(t, reg, "elang_outbox_relayed_total", nil); got != 30 {
		t.Fatalf("elang_outbox_relayed_total = %v, want 30", got)
	}
	ents := e.entries(t)
	if len(ents) != 30 {
		t.Fatalf("%d stream entries, want 30", len(ents))
	}
	for i, en := range ents {
		if en.ref != int64(i+1) || en.channel != "orders" || en.kind != KindEvent {
			t.Fatalf("entry %d: %+v, want event %d of orders", i, en, i+1)
		}
	}
	// The SQL rows name the stream ids they went out under.
	if n := e.count(t, "SELECT count(*) FROM elang_outbox WHERE stream_id IS NOT NULL AND delivered_at IS NOT NULL"); n != 30 {
		t.Fatalf("%d rows marked with their stream id, want 30", n)
	}
}

// The stream never exceeds its bound: 500 rows through a relay whose MAXLEN is 50,
// checked after every pass, leave exactly the newest 50.
func TestStreamNeverExceedsItsBound(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, "feed", 500)
	r := e.relay(Options{Batch: 40, MaxLen: 50})
	var most int64
	for {
		p, err := r.Dispatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n, err := e.srv.Admin().XLen(ctx, e.stream).Result()
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, n)
		if p.Read < 40 {
			break
		}
	}
	ents := e.entries(t)
	if most != 50 || len(ents) != 50 || ents[0].ref != 451 || ents[49].ref != 500 {
		t.Fatalf("largest XLEN %d, final %d entries (%v..%v), want at most 50 and exactly events 451..500", most, len(ents), ents[0].ref, ents[len(ents)-1].ref)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL"); n != 0 {
		t.Fatalf("%d rows still pending", n)
	}
}

// 10,000 outbox rows written by 20 concurrent transactions (each 250 events over
// two channels and 250 jobs), of which 5 (a quarter) roll back, while three relays
// run:
// exactly the 7,500 committed rows reach the stream, each once, none from a
// rolled-back transaction, and every channel's events are in the stream in id
// order 1..n without a gap.
func TestTenThousandRowsExactlyOnceInChannelOrder(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Three relays run side by side (as three outbox:work processes would): the
	// advisory lock serialises their passes, so none repeats another's work (no
	// dedupe hit at all), and order and counts hold.
	const relays = 3
	done := make(chan error, relays)
	regs := make([]*prometheus.Registry, relays)
	for i := range regs {
		regs[i] = prometheus.NewPedanticRegistry()
		r := e.relay(Options{Batch: 500, Poll: 5 * time.Millisecond, Registerer: regs[i]})
		go func() { done <- r.Work(ctx) }()
	}

	const txs, perTx = 20, 500
	var (
		mu         sync.Mutex
		rolledBack = map[string]bool{} // message ids written by rolled-back transactions
		wg         sync.WaitGroup
		errs       = make(chan error, txs)
	)
	for i := 0; i < txs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rollback := i%4 == 3
			tx, err := e.db.Begin(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = tx.Rollback(context.Background()) }()
			// Channels are locked in one order by every transaction (own room
			// first, then the shared one), so contention never deadlocks.
			own := fmt.Sprintf("room:%d", i%4)
			for j := 0; j < perTx/2; j++ {
				ch := own
				if j%2 == 1 {
					ch = "room:shared"
				}
				if _, err := (Events{}).Publish(ctx, tx, ch, []byte(fmt.Sprintf("tx %d event %d", i, j))); err != nil {
					errs <- err
					return
				}
				if _, err := (Queue{}).Push(ctx, tx, "mail", []byte(fmt.Sprintf("tx %d job %d", i, j))); err != nil {
					errs <- err
					return
				}
			}
			if rollback {
				rows, err := tx.Query(ctx, "SELECT message_id::text FROM elang_outbox WHERE xmin::text = (txid_current() % 4294967296)::text")
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for rows.Next() {
					var id string
					_ = rows.Scan(&id)
					rolledBack[id] = true
				}
				mu.Unlock()
				rows.Close()
				errs <- tx.Rollback(ctx)
				return
			}
			errs <- tx.Commit(ctx)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(rolledBack) != 5*perTx {
		t.Fatalf("saw %d message ids of rolled-back transactions, want %d", len(rolledBack), 5*perTx)
	}
	const want = 15 * perTx
	waitFor(t, 60*time.Second, "all 7,500 committed rows delivered", func() bool {
		return e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL") == 0
	})
	cancel()
	for i := 0; i < relays; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	var relayed, deduped float64
	for _, reg := range regs {
		relayed += promtest.Value(t, reg, "elang_outbox_relayed_total", nil)
		deduped += promtest.Value(t, reg, "elang_outbox_deduplicated_total", nil)
	}
	if relayed != want || deduped != 0 {
		t.Fatalf("the relays marked %v rows with %v dedupe hits, want %d and 0", relayed, deduped, want)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_outbox"); n != want {
		t.Fatalf("%d outbox rows committed, want %d", n, want)
	}
	ents := e.entries(t)
	if len(ents) != want {
		t.Fatalf("%d stream entries, want %d", len(ents), want)
	}
	committed := map[string]bool{}
	rows, err := e.db.Query(context.Background(), "SELECT message_id::text FROM elang_outbox")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		committed[id] = true
	}
	rows.Close()
	seen := map[string]bool{}
	last := map[string]int64{}
	jobs := 0
	for _, en := range ents {
		if seen[en.messageID] {
			t.Fatalf("message %s appended twice", en.messageID)
		}
		seen[en.messageID] = true
		if rolledBack[en.messageID] || !committed[en.messageID] {
			t.Fatalf("entry %+v is not a committed row", en)
		}
		switch en.kind {
		case KindEvent:
			if en.ref != last[en.channel]+1 {
				t.Fatalf("channel %s: event %d after %d", en.channel, en.ref, last[en.channel])
			}
			last[en.channel] = en.ref
		case KindJob:
			jobs++
		}
	}
	// 15 committed transactions: 125 events each to their room and to room:shared.
	wantLast := map[string]int64{"room:0": 5 * 125, "room:1": 5 * 125, "room:2": 5 * 125, "room:3": 0, "room:shared": 15 * 125}
	for ch, n := range wantLast {
		if last[ch] != n {
			t.Fatalf("channel %s ends at event %d, want %d", ch, last[ch], n)
		}
	}
	if jobs != 15*250 {
		t.Fatalf("%d job notifications, want %d", jobs, 15*250)
	}
}

// The channel's row lock lasts the whole business transaction: a second
// transaction publishing to the channel waits (PostgreSQL shows it waiting on a
// lock) until the first ends, then gets the next id if the first committed, or the
// same id if it rolled back; a transaction on another channel does not wait.
func TestChannelLockHeldForTheWholeTransaction(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, rollback := range []bool{false, true} {
		channel := fmt.Sprintf("report:%v", rollback)
		first, err := e.db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := (Events{}).Publish(ctx, first, channel, nil); err != nil || ev.ID != 1 {
			t.Fatalf("first publish: %+v %v", ev, err)
		}
		// Another channel is not held up.
		e.tx(t, false, func(tx pgx.Tx) error {
			_, err := (Events{}).Publish(ctx, tx, channel+":other", nil)
			return err
		})
		got := make(chan Event, 1)
		pid := make(chan int32, 1)
		go func() {
			tx, err := e.db.Begin(ctx)
			if err != nil {
				t.Error(err)
				pid <- 0
				got <- Event{}
				return
			}
			defer func() { _ = tx.Rollback(ctx) }()
			var p int32
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&p); err != nil {
				t.Error(err)
			}
			pid <- p
			ev, err := (Events{}).Publish(ctx, tx, channel, nil)
			if err != nil {
				t.Error(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Error(err)
			}
			got <- ev
		}()
		second := <-pid
		waitFor(t, 10*time.Second, "the second transaction waiting on the channel's lock", func() bool {
			return e.count(t, fmt.Sprintf("SELECT count(*) FROM pg_stat_activity WHERE pid = %d AND wait_event_type = 'Lock'", second)) == 1
		})
		select {
		case ev := <-got:
			t.Fatalf("the second transaction published %+v while the first held the channel", ev)
		default:
		}
		if rollback {
			err = first.Rollback(ctx)
		} else {
			err = first.Commit(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := int64(2)
		if rollback {
			want = 1
		}
		if ev := <-got; ev.ID != want {
			t.Fatalf("rollback=%v: the second transaction got id %d, want %d", rollback, ev.ID, want)
		}
	}
}
