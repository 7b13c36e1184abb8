package outbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/logtest"
	"github.com/hanchat/luagen/internal/promtest"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// Redis lost and restarted empty (no persistence) under a running relay: SQL keeps
// every job (50 queued during the outage) and every event of the replay history; the relay keeps retrying while
// Redis is down (failures counted, rows pending) and, once Redis answers again,
// republishes exactly the rows still pending, each once, without a restart of its
// own process. What was delivered before the loss is not sent again: consumers
// recover it by their SQL reconcile sweep (package consumer).
func TestEmptyRedisRestartLosesNothingFromSQL(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := prometheus.NewPedanticRegistry()
	log, rec := logtest.New()
	r := e.relay(Options{Batch: 50, Poll: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, PendingEvery: time.Millisecond, Registerer: reg, Logger: log})
	done := make(chan error, 1)
	go func() { done <- r.Work(ctx) }()

	e.publish(t, "orders", 300)
	waitFor(t, 30*time.Second, "300 rows delivered", func() bool {
		return e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL") == 0
	})
	e.srv.Kill()
	e.publish(t, "orders", 150)
	e.tx(t, false, func(tx pgx.Tx) error { // jobs queued while Redis is down
		for i := 0; i < 50; i++ {
			if _, err := (Queue{}).Push(context.Background(), tx, "mail", nil); err != nil {
				return err
			}
		}
		return nil
	})
	waitFor(t, 30*time.Second, "failed passes counted while Redis is down", func() bool {
		return promtest.Value(t, reg, "elang_outbox_relay_failures_total", nil) >= 2
	})
	waitFor(t, 30*time.Second, "the pending metric shows the 200 rows", func() bool {
		return promtest.Value(t, reg, "elang_outbox_pending", nil) == 200
	})
	if n := e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL"); n != 200 {
		t.Fatalf("%d rows pending while Redis is down, want 200", n)
	}
	e.srv.Restart()
	waitFor(t, 30*time.Second, "the 200 pending rows republished", func() bool {
		return e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL") == 0
	})
	waitFor(t, 30*time.Second, "the pending metric back to 0", func() bool {
		return promtest.Value(t, reg, "elang_outbox_pending", nil) == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if warned := rec.Records("outbox relay pass failed; rows stay pending"); len(warned) < 2 {
		t.Fatalf("%d warnings of failed passes, want at least 2", len(warned))
	}
	ents := e.entries(t)
	if len(ents) != 200 {
		t.Fatalf("%d entries in the restarted Redis, want the 200 pending ones", len(ents))
	}
	for i, en := range ents[:150] {
		if en.kind != KindEvent || en.ref != int64(301+i) {
			t.Fatalf("entry %d is %s %d, want event %d", i, en.kind, en.ref, 301+i)
		}
	}
	for _, en := range ents[150:] {
		if en.kind != KindJob || en.channel != "mail" {
			t.Fatalf("entry %+v, want a job of mail", en)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM elang_events WHERE channel = 'orders'"); n != 450 {
		t.Fatalf("replay history holds %d events, want 450", n)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_jobs WHERE state = 'ready'"); n != 50 {
		t.Fatalf("%d jobs ready, want the 50 queued while Redis was down", n)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_outbox"); n != 500 {
		t.Fatalf("%d outbox rows, want 500", n)
	}
}

// A hung Redis (SIGSTOP) fails a pass within RedisTimeout, marking nothing; once
// it answers again, one drain leaves exactly one entry per row, whether or not the
// hung server ran the timed-out pipeline when it resumed (then the dedupe keys
// answer for those rows).
func TestHungRedisFailsThePassInTime(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, "orders", 40)
	r := e.relay(Options{Batch: 100, RedisTimeout: 200 * time.Millisecond})
	e.srv.Pause()
	start := time.Now()
	_, err := r.Dispatch(ctx)
	took := time.Since(start)
	e.srv.Resume()
	if !errors.Is(err, ErrRedis) || took > 2*time.Second {
		t.Fatalf("pass against a hung Redis: %v after %v, want ErrRedis within the timeout", err, took)
	}
	if n := e.count(t, "SELECT count(*) FROM elang_outbox WHERE delivered_at IS NULL"); n != 40 {
		t.Fatalf("%d rows pending after the failed pass, want 40", n)
	}
	total, err := r.Drain(ctx, nil)
	if err != nil || total.Appended+total.Deduplicated != 40 {
		t.Fatalf("drain after resume: %+v %v, want 40 rows", total, err)
	}
	ents := e.entries(t)
	if len(ents) != 40 {
		t.Fatalf("%d entries, want 40 (one per row)", len(ents))
	}
	for i, en := range ents {
		if en.ref != int64(i+1) {
			t.Fatalf("entry %d is event %d", i, en.ref)
		}
	}
}
