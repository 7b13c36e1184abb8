package idempotency

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"
)

const resourceID = "6f1d3c6e-9a57-4c57-8d0a-6b0e3f1b2c3d"

func TestResponseRoundTripKeepsOnlyTheAllowList(t *testing.T) {
	in := Response{
		Status:     201,
		ResourceID: resourceID,
		Header: http.Header{
			"Content-Type":    {"application/json; charset=utf-8"},
			"ETag":            {`"v1"`},
			"Location":        {"/api/v1/messages/" + resourceID},
			"Set-Cookie":      {"session=secret"},
			"Authorization":   {"Bearer eyJhbGciOi"},
			"X-Amz-Signature": {"abc"},
			"X-Request-Id":    {"r-1"},
		},
	}
	b, err := in.MarshalMsgpack()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"session=secret", "Bearer", "abc", "r-1", "Set-Cookie", "Authorization"} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the encoded response holds %q", secret)
		}
	}
	var out Response
	if err := out.UnmarshalMsgpack(b); err != nil {
		t.Fatal(err)
	}
	want := Response{Status: 201, ResourceID: resourceID, Header: http.Header{
		"Content-Type": {"application/json; charset=utf-8"},
		"Etag":         {`"v1"`},
		"Location":     {"/api/v1/messages/" + resourceID},
	}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, in.Sanitized()); diff != "" {
		t.Fatalf("Sanitized (-want +got):\n%s", diff)
	}
}

// An allowed header whose value could carry a secret (a presigned URL in
// Location, a control character) is dropped too.
func TestAllowedHeadersWithUnsafeValuesAreDropped(t *testing.T) {
	for _, loc := range []string{
		"https://bucket.s3.example/obj?X-Amz-Signature=abc",
		"/download?token=abc",
		"/files/a#frag",
		"//evil.example/path",
		"/files/%2e%2e",
		"relative/path",
		"/" + strings.Repeat("a", 256),
	} {
		r := Response{Status: 303, Header: http.Header{"Location": {loc}}}
		if got := r.Sanitized().Header.Get("Location"); got != "" {
			t.Errorf("Location %q was kept", loc)
		}
	}
	r := Response{Status: 200, Header: http.Header{"Content-Type": {"text/plain\r\nSet-Cookie: x=1"}, "Etag": {strings.Repeat("e", 129)}}}
	if h := r.Sanitized().Header; len(h) != 0 {
		t.Errorf("unsafe values kept: %v", h)
	}
}

func TestResponseRefusesInvalidFields(t *testing.T) {
	for _, r := range []Response{
		{Status: 99},
		{Status: 600},
		{Status: 201, ResourceID: "user@example.com"},
		{Status: 201, ResourceID: strings.ToUpper(resourceID)},
		{Status: 422, ErrorCode: "Invalid Email: bob@example.com"},
		{Status: 422, ErrorCode: strings.Repeat("e", 65)},
	} {
		if _, err := r.MarshalMsgpack(); !errors.Is(err, ErrInvalidResponse) {
			t.Errorf("%+v: %v, want ErrInvalidResponse", r, err)
		}
	}
}

// Corrupt, truncated, foreign or oversize bytes are a clear error, never a
// panic and never a partial Response.
func TestCorruptResponsesAreErrors(t *testing.T) {
	good, err := Response{Status: 200, ResourceID: resourceID, ErrorCode: "ok", Header: http.Header{"Etag": {"x"}}}.MarshalMsgpack()
	if err != nil {
		t.Fatal(err)
	}
	enc := func(vs ...any) []byte {
		b, err := msgpack.Marshal(vs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := map[string][]byte{
		"empty":             {},
		"nil":               nil,
		"one byte":          {0xc1},
		"random":            []byte("this is not messagepack at all"),
		"truncated":         good[:len(good)-1],
		"trailing bytes":    append(append([]byte(nil), good...), 0x00),
		"a map":             mustMarshal(t, map[string]any{"status": 200}),
		"unknown format":    enc(2, 200, "", "", []any{}),
		"array of 4":        enc(1, 200, "", ""),
		"status as string":  enc(1, "200", "", "", []any{}),
		"status 700":        enc(1, 700, "", "", []any{}),
		"resource not uuid": enc(1, 200, "bob@example.com", "", []any{}),
		"header off list":   enc(1, 200, "", "", []any{[]any{"Set-Cookie", "a=b"}}),
		"bad location":      enc(1, 200, "", "", []any{[]any{"Location", "https://x/?sig=1"}}),
		"header twice":      enc(1, 200, "", "", []any{[]any{"Etag", "a"}, []any{"Etag", "b"}}),
		"too many headers":  enc(1, 200, "", "", []any{[]any{"Etag", "a"}, []any{"Etag", "a"}, []any{"Etag", "a"}, []any{"Etag", "a"}, []any{"Etag", "a"}}),
		"huge str length":   {0x95, 0x01, 0xcc, 0xc8, 0xdb, 0x7f, 0xff, 0xff, 0xff, 0x61},
		"huge array length": {0x95, 0x01, 0xcc, 0xc8, 0xa0, 0xa0, 0xdd, 0x7f, 0xff, 0xff, 0xff},
		"nil resource":      enc(1, 200, nil, "", []any{}),
	}
	for name, b := range cases {
		var r Response
		err := r.UnmarshalMsgpack(b)
		if !errors.Is(err, ErrCorruptResponse) {
			t.Errorf("%s: %v, want ErrCorruptResponse", name, err)
		}
		if r.Status != 0 || r.Header != nil {
			t.Errorf("%s: a partial response was written: %+v", name, r)
		}
	}
	var r Response
	if err := r.UnmarshalMsgpack(make([]byte, MaxResponseBytes+1)); !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("oversize: %v, want ErrResponseTooLarge", err)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzUnmarshalResponse: no input panics, and whatever decodes re-encodes to
// the same bytes (the decoder accepts only what the encoder writes).
func FuzzUnmarshalResponse(f *testing.F) {
	for _, r := range []Response{
		{Status: 201, ResourceID: resourceID, Header: http.Header{"Location": {"/a/b"}, "Content-Type": {"application/json"}}},
		{Status: 422, ErrorCode: "validation.email"},
		{Status: 200},
	} {
		b, err := r.MarshalMsgpack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x95, 0x01, 0xcc, 0xc8, 0xdb, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Response
		if err := r.UnmarshalMsgpack(b); err != nil {
			return
		}
		again, err := r.MarshalMsgpack()
		if err != nil {
			t.Fatalf("a decoded response does not encode: %v", err)
		}
		var r2 Response
		if err := r2.UnmarshalMsgpack(again); err != nil || !cmp.Equal(r, r2) {
			t.Fatalf("re-decoding changed the response: %v %+v %+v", err, r, r2)
		}
	})
}

func TestAllowedHeadersList(t *testing.T) {
	want := []string{"Content-Type", "Etag", "Last-Modified", "Location"}
	if diff := cmp.Diff(want, AllowedHeaders()); diff != "" {
		t.Fatal(diff)
	}
	AllowedHeaders()[0] = "Set-Cookie"
	if AllowedHeaders()[0] != "Content-Type" {
		t.Fatal("the allow-list can be changed through its copy")
	}
}
