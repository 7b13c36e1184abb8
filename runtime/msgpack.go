package runtime

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrMalformedMsgpack: bytes that are not exactly one well-formed MessagePack value.
var ErrMalformedMsgpack = errors.New("not exactly one well-formed MessagePack value")

// CheckMsgpack requires b to be at most maxBytes long and exactly one
// MessagePack value whose every length fits inside b. Call it before decoding
// bytes that crossed Redis: msgpack/v5 allocates what a str, bin, array or map
// header claims, so a 20-byte value claiming 3 GB would otherwise cost 3 GB.
// Skip reads without trusting the headers (at most 1 MiB of scratch).
func CheckMsgpack(b []byte, maxBytes int) error {
	if len(b) > maxBytes {
		return fmt.Errorf("%d bytes, the limit is %d: %w", len(b), maxBytes, ErrMalformedMsgpack)
	}
	r := bytes.NewReader(b)
	if err := msgpack.NewDecoder(r).Skip(); err != nil {
		return ErrMalformedMsgpack
	}
	if r.Len() != 0 {
		return fmt.Errorf("%d bytes after the value: %w", r.Len(), ErrMalformedMsgpack)
	}
	return nil
}
