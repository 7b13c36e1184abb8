// Package msgpackcheck checks MessagePack bytes that crossed Redis before a
// service decodes them, so a hostile or corrupt value cannot make the decoder
// allocate what its headers claim. EncodeCompact writes the services' own
// payloads in the form they store.
package msgpackcheck

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrMalformed: bytes that are not exactly one well-formed MessagePack value.
var ErrMalformed = errors.New("not exactly one well-formed MessagePack value")

// Check requires b to be at most maxBytes long and exactly one MessagePack value
// whose every length fits inside b. Call it before decoding bytes that crossed
// Redis: msgpack/v5 allocates what a str, bin, array or map header claims, so a
// 20-byte value claiming 3 GB would otherwise cost 3 GB. Skip reads without
// trusting the headers (at most 1 MiB of scratch).
func Check(b []byte, maxBytes int) error {
	if len(b) > maxBytes {
		return fmt.Errorf("%d bytes, the limit is %d: %w", len(b), maxBytes, ErrMalformed)
	}
	r := bytes.NewReader(b)
	if err := msgpack.NewDecoder(r).Skip(); err != nil {
		return ErrMalformed
	}
	if r.Len() != 0 {
		return fmt.Errorf("%d bytes after the value: %w", r.Len(), ErrMalformed)
	}
	return nil
}

// EncodeCompact is what write encodes, with integers in their shortest form
// (msgpack's UseCompactInts), as the services store their payloads. The error
// is write's.
func EncodeCompact(write func(enc *msgpack.Encoder) error) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := write(enc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
