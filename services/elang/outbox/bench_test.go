package outbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hanchat/luagen/generated/elang"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRelay measures the relay's throughput from SQL to the stream (one op is
// one outbox row: read in its pass's transaction, appended through outbox_relay in
// the pass's pipeline, marked delivered) at batch sizes 1, 100 and 1000, side by
// side in the same run with a plain XADD of the same fields and MAXLEN on the same
// server and client: one call per row, and pipelines of 1000. rows/s is b.N over
// the timed wall time.
func BenchmarkRelay(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	reset := func(b *testing.B) {
		b.Helper()
		if _, err := e.db.Exec(ctx, "TRUNCATE elang_outbox"); err != nil {
			b.Fatal(err)
		}
		if err := e.srv.Admin().FlushDB(ctx).Err(); err != nil { // the benchmark's own server, never 6379
			b.Fatal(err)
		}
	}
	rowsPerSec := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
	}
	for _, batch := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("relay/batch=%d", batch), func(b *testing.B) {
			reset(b)
			if _, err := e.db.Exec(ctx, `INSERT INTO elang_outbox (kind, channel, ref)
				SELECT 'event', 'bench:' || (g % 10), g FROM generate_series(1, $1::int) g`, b.N); err != nil {
				b.Fatal(err)
			}
			r := e.relay(Options{Batch: batch})
			b.ResetTimer()
			start := time.Now()
			total, err := r.Drain(ctx, nil)
			rowsPerSec(b, start)
			b.StopTimer()
			if err != nil || total.Appended != b.N {
				b.Fatalf("drain: %+v %v, want %d appended", total, err, b.N)
			}
		})
	}
	fields := func(i int) []any {
		return []any{"message_id", uuid.NewString(), "kind", KindEvent, "channel", fmt.Sprint("bench:", i%10), "ref", i + 1}
	}
	xadd := func(c redis.Cmdable, i int) {
		c.XAdd(ctx, &redis.XAddArgs{Stream: e.stream, MaxLen: elang.OutboxStreamMaxLen, Values: fields(i)})
	}
	b.Run("xadd/loop", func(b *testing.B) {
		reset(b)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := e.rdb.XAdd(ctx, &redis.XAddArgs{Stream: e.stream, MaxLen: elang.OutboxStreamMaxLen, Values: fields(i)}).Err(); err != nil {
				b.Fatal(err)
			}
		}
		rowsPerSec(b, start)
	})
	b.Run("xadd/pipeline=1000", func(b *testing.B) {
		reset(b)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; {
			p := e.rdb.Pipeline()
			for j := 0; j < 1000 && i < b.N; j, i = j+1, i+1 {
				xadd(p, i)
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
		rowsPerSec(b, start)
	})
}
