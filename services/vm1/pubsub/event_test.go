package pubsub_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/hanchat/luagen/services/msgpackcheck"
	"github.com/hanchat/luagen/services/vm1/pubsub"
	"github.com/vmihailenco/msgpack/v5"
)

// The DTOs of a test contract: ids and counters only, never message text.
type messageCreated struct {
	DialogID string `msgpack:"d"`
	Seq      int64  `msgpack:"s"`
}

type dialogRead struct {
	UserID string `msgpack:"u"`
	UpTo   int64  `msgpack:"t"`
}

// padded lets a test make an event of any size.
type padded struct {
	Pad []byte `msgpack:"p"`
}

func testContract(t testing.TB) *pubsub.Contract {
	t.Helper()
	c, err := pubsub.NewContract(
		pubsub.Allow[messageCreated]("message.created"),
		pubsub.Allow[dialogRead]("dialog.read"),
		pubsub.Allow[padded]("test.padded"),
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newUUID(t testing.TB) string { return uuid.NewString() }

func TestEventRoundTripIsCompact(t *testing.T) {
	c := testContract(t)
	ev := pubsub.Event{ID: newUUID(t), Type: "message.created", Entity: newUUID(t), DTO: messageCreated{DialogID: newUUID(t), Seq: 17}}
	b, err := c.Encode(ev, 4096)
	if err != nil {
		t.Fatal(err)
	}
	// The UUIDs of the envelope travel as 16 raw bytes, not 36 characters.
	if bytes.Contains(b, []byte(ev.ID)) || bytes.Contains(b, []byte(ev.Entity)) {
		t.Fatal("the envelope's UUIDs are encoded as text")
	}
	got, err := c.Decode(b, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if got != ev {
		t.Fatalf("decoded %+v, want %+v", got, ev)
	}
	// A pointer to the DTO type encodes the same; decoding gives the value.
	dto := ev.DTO.(messageCreated)
	ev.DTO = &dto
	b2, err := c.Encode(ev, 4096)
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("pointer DTO: %v", err)
	}
}

func TestEncodeRefusesWhatTheContractDoesNotAllow(t *testing.T) {
	c := testContract(t)
	id, ent := newUUID(t), newUUID(t)
	var nilDTO *messageCreated
	for name, tc := range map[string]struct {
		ev   pubsub.Event
		want error
	}{
		"unknown type":                     {pubsub.Event{ID: id, Type: "message.text", Entity: ent, DTO: messageCreated{}}, pubsub.ErrNotAllowed},
		"DTO of a type not allowed for it": {pubsub.Event{ID: id, Type: "dialog.read", Entity: ent, DTO: messageCreated{}}, pubsub.ErrNotAllowed},
		"a map as DTO":                     {pubsub.Event{ID: id, Type: "dialog.read", Entity: ent, DTO: map[string]any{"u": "x"}}, pubsub.ErrNotAllowed},
		"nil DTO":                          {pubsub.Event{ID: id, Type: "dialog.read", Entity: ent}, pubsub.ErrNotAllowed},
		"nil pointer DTO":                  {pubsub.Event{ID: id, Type: "message.created", Entity: ent, DTO: nilDTO}, pubsub.ErrNotAllowed},
		"id not a UUID":                    {pubsub.Event{ID: "42", Type: "dialog.read", Entity: ent, DTO: dialogRead{}}, pubsub.ErrInvalidEvent},
		"upper-case UUID":                  {pubsub.Event{ID: strings.ToUpper(id), Type: "dialog.read", Entity: ent, DTO: dialogRead{}}, pubsub.ErrInvalidEvent},
		"entity missing":                   {pubsub.Event{ID: id, Type: "dialog.read", DTO: dialogRead{}}, pubsub.ErrInvalidEvent},
		"too large":                        {pubsub.Event{ID: id, Type: "test.padded", Entity: ent, DTO: padded{Pad: make([]byte, 4096)}}, pubsub.ErrTooLarge},
	} {
		if _, err := c.Encode(tc.ev, 4096); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestNewContractRefusesBadEntries(t *testing.T) {
	for name, entries := range map[string][]pubsub.Entry{
		"none":          nil,
		"twice":         {pubsub.Allow[dialogRead]("dialog.read"), pubsub.Allow[messageCreated]("dialog.read")},
		"not a struct":  {pubsub.Allow[string]("dialog.read")},
		"a pointer":     {pubsub.Allow[*dialogRead]("dialog.read")},
		"an interface":  {pubsub.Allow[any]("dialog.read")},
		"bad type name": {pubsub.Allow[dialogRead]("Dialog Read")},
		"empty name":    {pubsub.Allow[dialogRead]("")},
	} {
		if _, err := pubsub.NewContract(entries...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Whatever a payload holds, Decode returns an event or an error matching
// ErrMalformed that does not quote it, and never panics.
func TestDecodeRefusesMalformedPayloads(t *testing.T) {
	c := testContract(t)
	good, err := c.Encode(pubsub.Event{ID: newUUID(t), Type: "dialog.read", Entity: newUUID(t), DTO: dialogRead{UserID: newUUID(t), UpTo: 9}}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v ...any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	id := make([]byte, 16)
	for name, b := range map[string][]byte{
		"empty":              {},
		"garbage":            []byte("SECRET-PAYLOAD not msgpack"),
		"truncated":          good[:len(good)-3],
		"trailing":           append(append([]byte{}, good...), 0x01),
		"wrong version":      enc(2, id, "dialog.read", id, dialogRead{}),
		"short id":           enc(1, id[:8], "dialog.read", id, dialogRead{}),
		"four elements":      enc(1, id, "dialog.read", id),
		"unknown type":       enc(1, id, "SECRET-PAYLOAD", id, dialogRead{}),
		"DTO of wrong shape": enc(1, id, "dialog.read", id, "SECRET-PAYLOAD"),
		"map envelope":       func() []byte { b, _ := msgpack.Marshal(map[string]int{"a": 1}); return b }(),
		"huge array head":    {0xdd, 0xff, 0xff, 0xff, 0xff},
		"id claims 3 GB":     []byte("\x95\x01\xdb\xc3C\xa3\xce4\xc4\x100000000000000000"),
		"too large":          append(append([]byte{}, good...), make([]byte, 4096)...),
	} {
		_, err := c.Decode(b, 4096)
		if !errors.Is(err, pubsub.ErrMalformed) {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.Contains(err.Error(), "SECRET-PAYLOAD") {
			t.Errorf("%s: the error quotes the payload: %v", name, err)
		}
	}
	if _, err := c.Decode(enc(1, id, "message.text", id, dialogRead{}), 4096); !errors.Is(err, pubsub.ErrNotAllowed) {
		t.Errorf("a well-formed event of a type outside the contract: %v", err)
	}
}

// A payload that is not exactly one well-formed MessagePack value within the
// limit is refused by msgpackcheck.Check before any decoding: its error
// matches msgpackcheck.ErrMalformed as well as ErrMalformed. A well-formed
// value that is not an event matches ErrMalformed only.
func TestDecodeChecksTheShapeWithMsgpackcheck(t *testing.T) {
	c := testContract(t)
	good, err := c.Encode(pubsub.Event{ID: newUUID(t), Type: "dialog.read", Entity: newUUID(t), DTO: dialogRead{UserID: newUUID(t), UpTo: 9}}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":           {},
		"truncated":       good[:len(good)-3],
		"trailing":        append(append([]byte{}, good...), 0x01),
		"two events":      append(append([]byte{}, good...), good...),
		"huge array head": {0xdd, 0xff, 0xff, 0xff, 0xff},
		"id claims 3 GB":  []byte("\x95\x01\xdb\xc3C\xa3\xce4\xc4\x100000000000000000"),
		"too large":       append(append([]byte{}, good...), make([]byte, 4096)...),
	} {
		if _, err := c.Decode(b, 4096); !errors.Is(err, pubsub.ErrMalformed) || !errors.Is(err, msgpackcheck.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed and msgpackcheck.ErrMalformed", name, err)
		}
	}
	if _, err := c.Decode(good, len(good)-1); !errors.Is(err, msgpackcheck.ErrMalformed) {
		t.Errorf("one byte above the limit: %v", err)
	}
	notEvent, _ := msgpack.Marshal(map[string]int{"a": 1})
	if _, err := c.Decode(notEvent, 4096); !errors.Is(err, pubsub.ErrMalformed) || errors.Is(err, msgpackcheck.ErrMalformed) {
		t.Errorf("a well-formed value that is not an event: %v", err)
	}
}

// A payload whose length headers claim gigabytes costs no more than a bounded
// scratch buffer: the claims are checked against the payload before decoding.
func TestDecodeOfALyingLengthAllocatesLittle(t *testing.T) {
	c := testContract(t)
	id := make([]byte, 16)
	dto := []byte{0x81, 0xa1, 'p', 0xc6, 0xff, 0xff, 0xff, 0x00} // {"p": bin32 of almost 4 GiB}
	env, err := msgpack.Marshal([]any{1, id, "test.padded", id})
	if err != nil {
		t.Fatal(err)
	}
	env[0] = 0x95 // five elements: the lying DTO is the fifth
	for name, b := range map[string][]byte{
		"id claims 3 GB":  []byte("\x95\x01\xdb\xc3C\xa3\xce4\xc4\x100000000000000000"),
		"DTO claims 4 GB": append(env, dto...),
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < 10; i++ {
			if _, err := c.Decode(b, 4096); !errors.Is(err, pubsub.ErrMalformed) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 16<<20 {
			t.Errorf("%s: %d bytes allocated per decode, want at most 16 MiB", name, per)
		}
	}
}

func FuzzDecode(f *testing.F) {
	c := testContract(f)
	good, _ := c.Encode(pubsub.Event{ID: newUUID(f), Type: "message.created", Entity: newUUID(f), DTO: messageCreated{DialogID: "d", Seq: 1}}, 4096)
	f.Add(good)
	f.Add([]byte{0x95, 0x01, 0xc4, 0x10})
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := c.Decode(b, 4096)
		if err != nil {
			if !errors.Is(err, pubsub.ErrMalformed) {
				t.Fatalf("an error that is not ErrMalformed: %v", err)
			}
			return
		}
		// Whatever decodes encodes again, within the limit.
		if _, err := c.Encode(ev, 4096); err != nil {
			t.Fatalf("a decoded event does not encode: %v", err)
		}
	})
}
