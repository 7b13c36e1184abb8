package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/luatest"
)

// On the harness: the first relay of a row appends it and keeps its dedupe key
// seven days holding the entry id; a retry appends nothing and answers that id;
// MAXLEN keeps the stream at its bound; after seven days the key is gone.
func TestRelayScriptOnHarness(t *testing.T) {
	ctx := context.Background()
	h := luatest.NewServer(luatest.NewClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	sc := h.Scripter()
	p, scripts := bind(t, sc, "acme:production:", false)
	stream, err := elang.NewOutboxStreamKey(p)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{
		"6f1c1a4e-0b7e-4c39-9a53-0d2f0b7f8a01", "6f1c1a4e-0b7e-4c39-9a53-0d2f0b7f8a02",
		"6f1c1a4e-0b7e-4c39-9a53-0d2f0b7f8a03", "6f1c1a4e-0b7e-4c39-9a53-0d2f0b7f8a04",
	}
	relay := func(i int) elang.OutboxRelayResult {
		t.Helper()
		dk, err := elang.NewOutboxDedupeKey(p, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		r, err := scripts.OutboxRelay(ctx, stream, dk, elang.OutboxRelayArgs{MessageID: ids[i], Kind: KindEvent, Channel: "report:42", Ref: int64(i + 1), Maxlen: 3})
		if err != nil {
			t.Fatalf("relay %d: %v", i, err)
		}
		return r
	}
	first := relay(0)
	if !first.Appended || first.ID == "" {
		t.Fatalf("first relay: %+v, want appended with an id", first)
	}
	ks := h.Keyspace()
	dedupe := "acme:production:outbox:dedupe:" + ids[0]
	if got := ks[dedupe]; got.TTL != 7*24*time.Hour {
		t.Fatalf("dedupe key TTL %v, want 7 days", got.TTL)
	}
	again := relay(0)
	if again.Appended || again.ID != first.ID {
		t.Fatalf("retry: %+v, want not appended and the first id %s", again, first.ID)
	}
	if n, _ := h.Do("XLEN", stream.String()); n != int64(1) {
		t.Fatalf("XLEN after a retry = %v, want 1", n)
	}
	for i := 1; i < 4; i++ {
		if r := relay(i); !r.Appended {
			t.Fatalf("row %d not appended", i)
		}
	}
	if n, _ := h.Do("XLEN", stream.String()); n != int64(3) {
		t.Fatalf("XLEN after 4 rows with MAXLEN 3 = %v, want 3", n)
	}
	h.Clock().Advance(7*24*time.Hour - time.Millisecond)
	if r := relay(0); r.Appended {
		t.Fatal("appended again before seven days passed")
	}
	h.Clock().Advance(2 * time.Millisecond) // Redis expires a key once now is past its deadline
	if r := relay(0); !r.Appended {
		t.Fatal("after seven days the dedupe key should be gone and the row appended")
	}
	// Every key the script wrote has a TTL except the stream, whose spec says ttl
	// none, bounded by MAXLEN (the harness knows no spec, so it reports the stream).
	streamOnly := `key "` + stream.String() + `" written without a TTL`
	for _, r := range sc.Results() {
		if r.Err != nil {
			t.Fatalf("run: %v", r.Err)
		}
		for _, v := range r.Violations {
			if v != streamOnly {
				t.Fatalf("violation: %s", v)
			}
		}
	}
	// The wrapper refuses a bound above the key's max_len before Redis is called.
	dk, _ := elang.NewOutboxDedupeKey(p, ids[0])
	if _, err := scripts.OutboxRelay(ctx, stream, dk, elang.OutboxRelayArgs{MessageID: ids[0], Kind: KindEvent, Channel: "c", Ref: 1, Maxlen: elang.OutboxStreamMaxLen + 1}); err == nil {
		t.Fatal("maxlen above the spec's max_len was accepted")
	}
}
