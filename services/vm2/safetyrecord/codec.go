package safetyrecord

import (
	"bytes"
	"fmt"

	"github.com/hanchat/luagen/services/msgpackcheck"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Every record is one MessagePack array: its tag ("text/1", ...), then its fields in
// a fixed order. The decoder first has msgpackcheck.Check check that the value is
// exactly one well-formed MessagePack value within the key's max_bytes, whose every
// length fits inside it (no trailing bytes, no header claiming more than is there);
// then it reads the record by hand, checking each field's type and each length
// against the field's own bound before it allocates anything. A damaged or hostile
// value costs at most its own size and never panics.

// encoder writes one record.
type encoder struct {
	buf bytes.Buffer
	e   *msgpack.Encoder
	err error
}

func newEncoder(tag string, fields int) *encoder {
	w := &encoder{}
	w.e = msgpack.NewEncoder(&w.buf)
	w.arrayLen(fields + 1)
	w.str(tag)
	return w
}

func (w *encoder) keep(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *encoder) arrayLen(n int) { w.keep(w.e.EncodeArrayLen(n)) }
func (w *encoder) str(s string)   { w.keep(w.e.EncodeString(s)) }
func (w *encoder) bin(b []byte)   { w.keep(w.e.EncodeBytes(b)) }
func (w *encoder) boolean(b bool) { w.keep(w.e.EncodeBool(b)) }
func (w *encoder) uint16(n uint16) {
	w.keep(w.e.EncodeUint16(n))
}

func (w *encoder) strs(ss []string) {
	w.arrayLen(len(ss))
	for _, s := range ss {
		w.str(s)
	}
}

func (w *encoder) bytes() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	return w.buf.Bytes(), nil
}

// decoder reads one record; the first error sticks and later reads do nothing.
type decoder struct {
	record string
	fault  error            // the sentinel of every error: ErrCorrupt, or ErrInvalidWakeup
	d      *msgpack.Decoder // nil when msgpackcheck.Check refused the value
	err    error
}

// newDecoder starts reading a record of at most maxBytes; release it with finish.
func newDecoder(record string, b []byte, maxBytes int, tag string, fields int, fault error) *decoder {
	d := &decoder{record: record, fault: fault}
	if err := msgpackcheck.Check(b, maxBytes); err != nil {
		d.err = &RecordError{Record: record, Reason: "bad MessagePack", Err: fmt.Errorf("%w: %w", fault, err)}
		return d
	}
	d.d = msgpack.GetDecoder()
	d.d.Reset(bytes.NewReader(b))
	if n := d.arrayLen("", fields+1); d.err == nil && n != fields+1 {
		d.fail("", fmt.Sprintf("an array of %d elements, want %d", n, fields+1))
	}
	if got := d.str("tag", len(tag)+16); d.err == nil && got != tag {
		d.fail("tag", "not a "+tag+" record")
	}
	return d
}

func (d *decoder) fail(field, reason string) {
	if d.err == nil {
		d.err = &RecordError{Record: d.record, Field: field, Reason: reason, Err: d.fault}
	}
}

// next reports whether a value follows whose first byte is(c); otherwise it
// fails field as truncated or as "not "+what.
func (d *decoder) next(field, what string, is func(c byte) bool) bool {
	if d.err != nil {
		return false
	}
	c, err := d.d.PeekCode()
	if err != nil {
		d.fail(field, "truncated")
		return false
	}
	if !is(c) {
		d.fail(field, "not "+what)
		return false
	}
	return true
}

// arrayLen reads an array header of at most max elements.
func (d *decoder) arrayLen(field string, max int) int {
	if !d.next(field, "an array", func(c byte) bool {
		return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
	}) {
		return 0
	}
	n, err := d.d.DecodeArrayLen()
	switch {
	case err != nil:
		d.fail(field, "truncated")
		return 0
	case n > max:
		d.fail(field, fmt.Sprintf("%d elements, at most %d", n, max))
		return 0
	}
	return n
}

// raw reads a str (wantStr) or bin of at most max bytes.
func (d *decoder) raw(field string, max int, wantStr bool) []byte {
	is, what := msgpcode.IsBin, "binary"
	if wantStr {
		is, what = msgpcode.IsString, "a string"
	}
	if !d.next(field, what, is) {
		return nil
	}
	n, err := d.d.DecodeBytesLen()
	switch {
	case err != nil || n < 0:
		d.fail(field, "truncated")
		return nil
	case n > max:
		d.fail(field, fmt.Sprintf("%d bytes, at most %d", n, max))
		return nil
	}
	b := make([]byte, n)
	if err := d.d.ReadFull(b); err != nil {
		d.fail(field, "truncated")
		return nil
	}
	return b
}

func (d *decoder) str(field string, max int) string { return string(d.raw(field, max, true)) }
func (d *decoder) bin(field string, max int) []byte { return d.raw(field, max, false) }

func (d *decoder) strs(field string, maxItems, maxLen int) []string {
	n := d.arrayLen(field, maxItems)
	if d.err != nil || n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		s := d.str(field, maxLen)
		if d.err != nil {
			d.err.(*RecordError).Field = fmt.Sprintf("%s[%d]", field, i)
		}
		out = append(out, s)
	}
	return out
}

func (d *decoder) boolean(field string) bool {
	if !d.next(field, "a boolean", func(c byte) bool { return c == msgpcode.True || c == msgpcode.False }) {
		return false
	}
	v, err := d.d.DecodeBool()
	if err != nil {
		d.fail(field, "truncated")
	}
	return v
}

func (d *decoder) uint16(field string) uint16 {
	if !d.next(field, "an unsigned 16-bit integer", func(c byte) bool {
		return msgpcode.IsFixedNum(c) || c == msgpcode.Uint8 || c == msgpcode.Uint16
	}) {
		return 0
	}
	v, err := d.d.DecodeInt64()
	if err != nil || v < 0 || v > 0xffff {
		d.fail(field, "not an unsigned 16-bit integer")
		return 0
	}
	return uint16(v)
}

// finish reports the first error and returns the MessagePack decoder to its pool.
// Once every field is read without error, so is the whole value: each field read
// takes exactly one MessagePack value, and msgpackcheck.Check made sure nothing follows
// the record's array.
func (d *decoder) finish() error {
	if d.d != nil {
		d.d.Reset(nil)
		msgpack.PutDecoder(d.d)
		d.d = nil
	}
	return d.err
}
