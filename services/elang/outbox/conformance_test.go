package outbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/luatest"
	"github.com/redis/go-redis/v9"
)

// outbox_relay gives the same replies and leaves the same keyspace on the harness
// and on a real redis-server for one scenario (appends past MAXLEN, retries of a
// kept and of a trimmed row). Stream ids come from each side's own clock, so both
// keyspaces name an id by the order of the append that made it ("#3").
func TestRelayScriptConformsToRedis(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	real := srv.Client(elang.DB0)
	h := luatest.NewServer(luatest.NewClock(time.Now()))
	sides := []struct {
		name string
		do   redis.Scripter
		read func() (luatest.Keyspace, error)
	}{
		{"redis", real, func() (luatest.Keyspace, error) { return luatest.RedisKeyspace(ctx, real, "*") }},
		{"harness", h.Scripter(), func() (luatest.Keyspace, error) { return h.Keyspace(), nil }},
	}
	rows := []int{1, 2, 1, 3, 4, 5, 2, 5} // 2 is retried after MAXLEN 3 trimmed it, 1 and 5 while kept
	type step struct {
		Appended bool
		Ordinal  string
	}
	var results [2][]step
	var spaces [2]luatest.Keyspace
	for i, side := range sides {
		p, scripts := bind(t, side.do, "acme:production:", false)
		stream, _ := elang.NewOutboxStreamKey(p)
		ordinal := map[string]string{}
		for _, row := range rows {
			id := fmt.Sprintf("6f1c1a4e-0b7e-4c39-9a53-0d2f0b7f8a%02d", row)
			dk, _ := elang.NewOutboxDedupeKey(p, id)
			r, err := scripts.OutboxRelay(ctx, stream, dk, elang.OutboxRelayArgs{MessageID: id, Kind: KindEvent, Channel: "report:42", Ref: int64(row), Maxlen: 3})
			if err != nil {
				t.Fatalf("%s: row %d: %v", side.name, row, err)
			}
			if r.Appended {
				ordinal[r.ID] = fmt.Sprintf("#%d", len(ordinal)+1)
			}
			results[i] = append(results[i], step{r.Appended, ordinal[r.ID]})
		}
		ks, err := side.read()
		if err != nil {
			t.Fatal(err)
		}
		name := func(id string) string {
			if o, ok := ordinal[id]; ok {
				return o
			}
			return id
		}
		for k, e := range ks {
			if e.Type == "string" {
				e.String = name(e.String)
			}
			if e.Stream != nil {
				for j := range e.Stream.Entries {
					e.Stream.Entries[j].ID = name(e.Stream.Entries[j].ID)
				}
				e.Stream.LastID, e.Stream.MaxDeletedID, e.Stream.RecordedFirstID = name(e.Stream.LastID), name(e.Stream.MaxDeletedID), name(e.Stream.RecordedFirstID)
			}
			ks[k] = e
		}
		spaces[i] = ks
	}
	want := []step{{true, "#1"}, {true, "#2"}, {false, "#1"}, {true, "#3"}, {true, "#4"}, {true, "#5"}, {false, "#2"}, {false, "#5"}}
	if diff := cmp.Diff(want, results[0]); diff != "" {
		t.Fatalf("redis replies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(results[0], results[1]); diff != "" {
		t.Fatalf("replies: redis (-) vs harness (+):\n%s", diff)
	}
	ttl := cmp.Comparer(func(a, b time.Duration) bool { return (a - b).Abs() <= 5*time.Second })
	if diff := cmp.Diff(spaces[0], spaces[1], ttl); diff != "" {
		t.Fatalf("keyspace: redis (-) vs harness (+):\n%s", diff)
	}
	if n := len(spaces[0]); n != 6 {
		t.Fatalf("%d keys, want the stream and 5 dedupe keys", n)
	}
}
