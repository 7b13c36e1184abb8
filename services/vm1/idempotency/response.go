package idempotency

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/hanchat/luagen/runtime/keypart"
	"github.com/hanchat/luagen/services/msgpackcheck"
	"github.com/vmihailenco/msgpack/v5"
)

// MaxResponseBytes bounds an encoded Response. It is far below the record's
// limit in keyspec.yaml (vm1.APIIdemMaxBytes), since a Response holds no body.
const MaxResponseBytes = 4096

// responseFormat is the first element of every encoded Response; a decoder
// refuses formats it does not know.
const responseFormat = 1

// Errors of encoding and decoding a Response.
var (
	// ErrInvalidResponse: a Response field breaks its rule (status, resource id, error code).
	ErrInvalidResponse = errors.New("invalid idempotent response")
	// ErrResponseTooLarge: an encoded Response above MaxResponseBytes.
	ErrResponseTooLarge = errors.New("idempotent response too large")
	// ErrCorruptResponse: bytes that are not an encoded Response (corrupt MessagePack,
	// another format, trailing bytes, a field out of bounds).
	ErrCorruptResponse = errors.New("corrupt idempotent response")
)

// Response is what an idempotent call answered, kept so that a retry gets the
// same answer. It is sanitized by construction: it has no body and no field for a
// token, cookie, presigned URL, message text or personal data. A replay renders
// the resource named by ResourceID afresh (so a download URL is presigned again,
// never replayed), or the error named by ErrorCode.
type Response struct {
	// Status is the HTTP status, 100..599. 503 and 504 are transient and never stored.
	Status int
	// ResourceID is the canonical lower-case UUID of the resource the call created
	// or changed, or empty.
	ResourceID string
	// ErrorCode is the machine-readable error of a failed call ([a-z0-9_.], at
	// most 64 characters), or empty.
	ErrorCode string
	// Header holds response headers. Only the allow-listed ones are stored (see
	// AllowedHeaders), the first value of each; the rest, and allowed ones whose
	// value breaks its rule, are dropped.
	Header http.Header
}

// allowedHeaders are the response headers a stored Response keeps, with the
// rule each value must pass (headerOK). Set-Cookie, Authorization, any header
// carrying a URL with a query (a presigned URL), and everything else are dropped.
var allowedHeaders = map[string]string{
	"Content-Type":  "a media type: visible ASCII, at most 128 characters",
	"Etag":          "visible ASCII, at most 128 characters",
	"Last-Modified": "visible ASCII, at most 64 characters",
	"Location":      "an absolute path without query or fragment, at most 256 characters",
}

// AllowedHeaders lists, sorted, the header names a stored Response keeps:
// Content-Type, Etag, Last-Modified and Location (an absolute path without query
// or fragment, so never a presigned URL).
func AllowedHeaders() []string {
	out := make([]string, 0, len(allowedHeaders))
	for name := range allowedHeaders {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// headerOK reports whether v is a value the allow-listed header name may keep.
func headerOK(name, v string) bool {
	switch name {
	case "Content-Type", "Etag":
		return len(v) <= 128 && visible(v, true)
	case "Last-Modified":
		return len(v) <= 64 && visible(v, true)
	case "Location":
		if len(v) > 256 || !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") {
			return false
		}
		for i := 0; i < len(v); i++ {
			c := v[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/-._~", c) >= 0) {
				return false
			}
		}
		return true
	}
	return false
}

// visible reports whether s is non-empty printable ASCII (spaces allowed when space).
func visible(s string, space bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 && !(space && c == ' ') || c > 0x7e {
			return false
		}
	}
	return true
}

func errorCodeOK(s string) bool {
	if len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// sanitizedHeader keeps the allow-listed headers with valid values, each name's
// first value only, sorted by name.
func sanitizedHeader(h http.Header) [][2]string {
	var out [][2]string
	for name, vs := range h {
		cn := http.CanonicalHeaderKey(name)
		if _, ok := allowedHeaders[cn]; !ok || len(vs) == 0 || !headerOK(cn, vs[0]) {
			continue
		}
		out = append(out, [2]string{cn, vs[0]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	for i := 1; i < len(out); i++ {
		if out[i][0] == out[i-1][0] {
			out = append(out[:i], out[i+1:]...) // two spellings of one name: keep one
			i--
		}
	}
	return out
}

func (r Response) validate() error {
	switch {
	case r.Status < 100 || r.Status > 599:
		return fmt.Errorf("status %d: want 100..599: %w", r.Status, ErrInvalidResponse)
	case r.ResourceID != "" && !keypart.UUID(r.ResourceID):
		return fmt.Errorf("resource id: want a canonical lower-case UUID: %w", ErrInvalidResponse)
	case !errorCodeOK(r.ErrorCode):
		return fmt.Errorf("error code: want at most 64 characters of [a-z0-9_.]: %w", ErrInvalidResponse)
	}
	return nil
}

// Sanitized is r as it is stored: the header reduced to the allow-list.
func (r Response) Sanitized() Response {
	out := r
	out.Header = http.Header{}
	for _, kv := range sanitizedHeader(r.Header) {
		out.Header[kv[0]] = []string{kv[1]}
	}
	return out
}

// MarshalMsgpack encodes the sanitized Response as MessagePack: the array
// [format, status, resource_id, error_code, [[name, value], ...]].
func (r Response) MarshalMsgpack() ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	hdr := sanitizedHeader(r.Header)
	b, err := msgpackcheck.EncodeCompact(func(enc *msgpack.Encoder) error {
		err := errors.Join(
			enc.EncodeArrayLen(5),
			enc.EncodeInt(responseFormat),
			enc.EncodeInt(int64(r.Status)),
			enc.EncodeString(r.ResourceID),
			enc.EncodeString(r.ErrorCode),
			enc.EncodeArrayLen(len(hdr)),
		)
		for _, kv := range hdr {
			err = errors.Join(err, enc.EncodeArrayLen(2), enc.EncodeString(kv[0]), enc.EncodeString(kv[1]))
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("encode idempotent response: %w", err)
	}
	if len(b) > MaxResponseBytes {
		return nil, fmt.Errorf("%d bytes, the limit is %d: %w", len(b), MaxResponseBytes, ErrResponseTooLarge)
	}
	return b, nil
}

// UnmarshalMsgpack decodes what MarshalMsgpack wrote. Anything else (corrupt or
// truncated MessagePack, another format, a field out of bounds, a header off the
// allow-list, trailing bytes) is an error matching ErrCorruptResponse, or
// ErrResponseTooLarge above MaxResponseBytes; it never panics.
func (r *Response) UnmarshalMsgpack(b []byte) error {
	if len(b) > MaxResponseBytes {
		return fmt.Errorf("%d bytes, the limit is %d: %w", len(b), MaxResponseBytes, ErrResponseTooLarge)
	}
	// One well-formed value whose every length fits inside b, before any decoding.
	if err := msgpackcheck.Check(b, MaxResponseBytes); err != nil {
		return fmt.Errorf("%w (%w)", ErrCorruptResponse, err)
	}
	rd := bytes.NewReader(b)
	dec := msgpack.NewDecoder(rd)
	corrupt := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w (%w)", what, ErrCorruptResponse, err)
		}
		return fmt.Errorf("%s: %w", what, ErrCorruptResponse)
	}
	n, err := dec.DecodeArrayLen()
	if err != nil || n != 5 {
		return corrupt("want an array of 5", err)
	}
	format, err := dec.DecodeInt64()
	if err != nil || format != responseFormat {
		return corrupt("unknown format", err)
	}
	status, err := dec.DecodeInt64()
	if err != nil || status < 100 || status > 599 {
		return corrupt("status", err)
	}
	out := Response{Status: int(status), Header: http.Header{}}
	if out.ResourceID, err = boundedString(dec, 36); err != nil {
		return corrupt("resource id", err)
	}
	if out.ErrorCode, err = boundedString(dec, 64); err != nil {
		return corrupt("error code", err)
	}
	nh, err := dec.DecodeArrayLen()
	if err != nil || nh < 0 || nh > len(allowedHeaders) {
		return corrupt("headers", err)
	}
	for i := 0; i < nh; i++ {
		if pn, err := dec.DecodeArrayLen(); err != nil || pn != 2 {
			return corrupt("header pair", err)
		}
		name, err := boundedString(dec, 32)
		if err != nil {
			return corrupt("header name", err)
		}
		value, err := boundedString(dec, 256)
		if err != nil {
			return corrupt("header value", err)
		}
		if _, ok := allowedHeaders[name]; !ok || !headerOK(name, value) || out.Header.Get(name) != "" {
			return corrupt("header off the allow-list", nil)
		}
		out.Header[name] = []string{value}
	}
	if rd.Len() != 0 {
		return corrupt("trailing bytes", nil)
	}
	if err := out.validate(); err != nil {
		return corrupt("fields", err)
	}
	*r = out
	return nil
}

// boundedString reads a MessagePack str or bin of at most max bytes without
// allocating what a corrupt length prefix claims.
func boundedString(dec *msgpack.Decoder, max int) (string, error) {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return "", err
	}
	if n < 0 || n > max {
		return "", fmt.Errorf("length %d, at most %d", n, max)
	}
	buf := make([]byte, n)
	if err := dec.ReadFull(buf); err != nil {
		return "", err
	}
	return string(buf), nil
}
