package luatest

import (
	"context"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/redistest"
)

// EXPIRETIME and PEXPIRETIME answer the absolute expiry (seconds rounded to the
// nearest, as Redis 7.0 does), -1 without expiry and -2 for a missing key, and
// agree with a real server on keys whose expiry is set absolutely (so the two
// clocks do not matter).
func TestExpireTime(t *testing.T) {
	at := []int64{99999999999500, 99999999999499, 4102444800000}
	harness := NewServer(NewClock(epoch))
	runSteps(t, harness, []step{
		{args: s("pexpiretime", "missing"), want: int64(-2)},
		{args: s("expiretime", "missing"), want: int64(-2)},
		{args: s("set", "k", "v"), want: "OK"},
		{args: s("pexpiretime", "k"), want: int64(-1)},
		{args: s("expiretime", "k"), want: int64(-1)},
		{args: s("pexpire", "k", 1500), want: int64(1)},
		{args: s("pexpiretime", "k"), want: epoch.Add(1500 * time.Millisecond).UnixMilli()},
		{args: s("pexpiretime", "k", "x"), wantErr: "ERR wrong number of arguments for 'pexpiretime' command"},
	})

	srv := redistest.Start(t)
	rdb := srv.Client(0)
	ctx := context.Background()
	for _, ms := range at {
		for _, name := range []string{"pexpiretime", "expiretime"} {
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Do(ctx, "pexpireat", "k", ms).Err(); err != nil {
				t.Fatal(err)
			}
			want, err := rdb.Do(ctx, name, "k").Int64()
			if err != nil {
				t.Fatal(err)
			}
			runSteps(t, harness, []step{
				{args: s("set", "k", "v"), want: "OK"},
				{args: s("pexpireat", "k", ms), want: int64(1)},
				{args: s(name, "k"), want: want},
			})
		}
	}
}
