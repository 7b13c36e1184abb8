// Package pubsub is HAN Chat's realtime notification bus on VM1 (seed 000 §5):
// typed events published on han:rt:dialog:{dialog_id} and han:rt:user:{user_id},
// and a Subscriber that decodes them and tells the application when it must
// reconcile.
//
// Redis Pub/Sub is at-most-once: an event published while a subscriber is
// disconnected, or dropped because its reader fell behind, is gone. PostgreSQL
// stays the source of truth, so the Subscriber calls a reconcile callback
// whenever it cannot vouch that no event was missed on a channel: once the
// channel is subscribed, after every reconnect, and after it dropped an event.
// The application then runs its REST reconciliation.
//
// A payload carries only an event id, its type, the UUID of the entity it is
// about and a DTO whose Go type the Contract allows for that event type. It is
// MessagePack (vmihailenco/msgpack/v5), at most the channel's max_bytes from
// keyspec.yaml (4 KiB). DTOs must not carry message text, file bytes, presigned
// URLs, tokens or personal data: receivers fetch those through the API.
//
// A Subscriber exports its metrics (seed 000 §11) on Options.Registerer:
// subscribers, reconnects, drops by reason, reconciliations, and, with a
// Monitor, the server-side output buffer of its connection sampled from CLIENT
// LIST. The generated config bounds that buffer (client-output-buffer-limit
// pubsub); a subscriber that reaches it is disconnected and reconnects and
// reconciles like after any other loss.
package pubsub

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/uuid"

	"github.com/hanchat/luagen/runtime/keypart"
	"github.com/hanchat/luagen/services/msgpackcheck"
	"github.com/vmihailenco/msgpack/v5"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotAllowed: an event type the Contract does not list, or a DTO of
	// another Go type than the one it allows for the event type.
	ErrNotAllowed = errors.New("pubsub: not allowed by the contract")
	// ErrTooLarge: an encoded event above the channel's limit.
	ErrTooLarge = errors.New("pubsub: payload too large")
	// ErrMalformed: a payload that is not exactly one well-formed event.
	ErrMalformed = errors.New("pubsub: malformed payload")
	// ErrInvalidEvent: an event with a missing or malformed field.
	ErrInvalidEvent = errors.New("pubsub: invalid event")
)

// formatVersion is the first element of every payload.
const formatVersion = 1

// EventType names a kind of event, e.g. "message.created": 1..64 characters of
// [a-z0-9._-].
type EventType string

func (t EventType) valid() bool {
	if len(t) < 1 || len(t) > 64 {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Event is one realtime notification.
type Event struct {
	// ID is the event's UUID (e.g. its outbox row's id); receivers use it to
	// drop an event they already applied.
	ID string
	// Type is the kind of event; the Contract must allow it.
	Type EventType
	// Entity is the UUID of the message, dialog or user the event is about.
	Entity string
	// DTO is the event's data: a value (or a non-nil pointer to a value) of the
	// Go type the Contract allows for Type. Decoded events hold a value.
	DTO any
}

// Entry is one allowed event type and its DTO type, made by Allow.
type Entry struct {
	typ EventType
	dto reflect.Type
}

// Allow lists event type t with DTO type T, which must be a struct type.
func Allow[T any](t EventType) Entry {
	return Entry{typ: t, dto: reflect.TypeFor[T]()}
}

// Contract is the allow-list of event types and their DTO types: the realtime
// contract. It cannot change once made and is safe for concurrent use.
type Contract struct {
	dtos map[EventType]reflect.Type
}

// NewContract makes a Contract of the entries. Each event type appears once, with
// a struct DTO type.
func NewContract(entries ...Entry) (*Contract, error) {
	if len(entries) == 0 {
		return nil, errors.New("pubsub: NewContract: no event types")
	}
	c := &Contract{dtos: map[EventType]reflect.Type{}}
	for i, e := range entries {
		switch {
		case !e.typ.valid():
			return nil, fmt.Errorf("pubsub: NewContract: entry %d: event type: want 1..64 characters of [a-z0-9._-]", i)
		case e.dto == nil || e.dto.Kind() != reflect.Struct:
			return nil, fmt.Errorf("pubsub: NewContract: event type %s: the DTO type must be a struct type, got %v", e.typ, e.dto)
		case c.dtos[e.typ] != nil:
			return nil, fmt.Errorf("pubsub: NewContract: event type %s listed twice", e.typ)
		}
		c.dtos[e.typ] = e.dto
	}
	return c, nil
}

// Encode is an event's payload: MessagePack [1, id (16 bytes), type, entity
// (16 bytes), DTO]. It fails with ErrInvalidEvent, ErrNotAllowed, or
// ErrTooLarge when the payload is above maxBytes.
func (c *Contract) Encode(ev Event, maxBytes int) ([]byte, error) {
	id, ok := parseUUID(ev.ID)
	if !ok {
		return nil, fmt.Errorf("event ID: want a canonical lower-case UUID: %w", ErrInvalidEvent)
	}
	entity, ok := parseUUID(ev.Entity)
	if !ok {
		return nil, fmt.Errorf("event Entity: want a canonical lower-case UUID: %w", ErrInvalidEvent)
	}
	want := c.dtos[ev.Type]
	if want == nil {
		return nil, fmt.Errorf("event type %q: %w", limitText(string(ev.Type)), ErrNotAllowed)
	}
	dto := reflect.ValueOf(ev.DTO)
	if dto.Kind() == reflect.Pointer && !dto.IsNil() {
		dto = dto.Elem()
	}
	if !dto.IsValid() || dto.Type() != want {
		return nil, fmt.Errorf("event type %s: DTO of type %T, the contract allows %v: %w", ev.Type, ev.DTO, want, ErrNotAllowed)
	}
	b, err := msgpackcheck.EncodeCompact(func(enc *msgpack.Encoder) error {
		return errors.Join(
			enc.EncodeArrayLen(5),
			enc.EncodeInt(formatVersion),
			enc.EncodeBytes(id[:]),
			enc.EncodeString(string(ev.Type)),
			enc.EncodeBytes(entity[:]),
			enc.EncodeValue(dto),
		)
	})
	if err != nil {
		return nil, fmt.Errorf("event type %s: encode: %w", ev.Type, err)
	}
	if len(b) > maxBytes {
		return nil, fmt.Errorf("event type %s: %d bytes, the limit is %d: %w", ev.Type, len(b), maxBytes, ErrTooLarge)
	}
	return b, nil
}

// Decode reads a payload made by Encode. Anything else, a payload above
// maxBytes, or an event type or DTO the contract does not allow, is an error
// matching ErrMalformed (and ErrNotAllowed for types); it never panics, and the
// error never quotes the payload. Fields a DTO type does not have are ignored,
// so a newer publisher's event still reads.
func (c *Contract) Decode(b []byte, maxBytes int) (ev Event, err error) {
	// The decoder allocates what a length header claims: check first that b is
	// one value, within the limit, whose every length fits in b.
	if err := msgpackcheck.Check(b, maxBytes); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	defer func() {
		if p := recover(); p != nil {
			ev, err = Event{}, fmt.Errorf("the decoder failed: %w", ErrMalformed)
		}
	}()
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	n, err := dec.DecodeArrayLen()
	if err != nil || n != 5 {
		return Event{}, fmt.Errorf("want an array of 5 elements: %w", ErrMalformed)
	}
	if v, err := dec.DecodeInt(); err != nil || v != formatVersion {
		return Event{}, fmt.Errorf("format version: want %d: %w", formatVersion, ErrMalformed)
	}
	id, err := decodeUUID(dec)
	if err != nil {
		return Event{}, fmt.Errorf("event id: %w", err)
	}
	typ, err := dec.DecodeString()
	if err != nil {
		return Event{}, fmt.Errorf("event type: want a string: %w", ErrMalformed)
	}
	want := c.dtos[EventType(typ)]
	if want == nil {
		return Event{}, fmt.Errorf("event type %q: %w (%w)", limitText(typ), ErrNotAllowed, ErrMalformed)
	}
	entity, err := decodeUUID(dec)
	if err != nil {
		return Event{}, fmt.Errorf("event entity: %w", err)
	}
	// The array holds exactly five values and nothing follows it (msgpackcheck.Check):
	// once the DTO is read, the payload is.
	dto := reflect.New(want)
	if err := dec.DecodeValue(dto.Elem()); err != nil {
		return Event{}, fmt.Errorf("event type %s: DTO does not decode into %v: %w", typ, want, ErrMalformed)
	}
	return Event{ID: formatUUID(id), Type: EventType(typ), Entity: formatUUID(entity), DTO: dto.Elem().Interface()}, nil
}

func decodeUUID(dec *msgpack.Decoder) ([16]byte, error) {
	var u [16]byte
	if n, err := dec.DecodeBytesLen(); err != nil || n != 16 {
		return u, fmt.Errorf("want 16 bytes: %w", ErrMalformed)
	}
	if err := dec.ReadFull(u[:]); err != nil {
		return u, fmt.Errorf("want 16 bytes: %w", ErrMalformed)
	}
	return u, nil
}

// limitText shortens text that came from outside before it enters an error.
func limitText(s string) string {
	if !EventType(s).valid() {
		return "<not an event type name>"
	}
	return s
}

// parseUUID accepts only the canonical lower-case form (one spelling per id).
func parseUUID(s string) ([16]byte, bool) {
	if !keypart.UUID(s) {
		return [16]byte{}, false
	}
	u, err := uuid.Parse(s)
	return u, err == nil
}

func formatUUID(u [16]byte) string { return uuid.UUID(u).String() }
