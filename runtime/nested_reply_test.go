package runtime_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/runtime"
)

type note struct {
	Author string
	At     *int64
}

type section struct {
	Heading string
	Notes   []note
}

func decodeNote(r *runtime.Reply) note {
	return note{Author: r.String("author"), At: runtime.Nullable(r, "at", r.Int)}
}

func decodeSection(r *runtime.Reply) section {
	var s section
	s.Heading = r.String("heading")
	s.Notes = runtime.List(r, "notes", 2, decodeNote)
	return s
}

func TestNullableAndNestedLists(t *testing.T) {
	at := int64(7)
	v := []any{nil, int64(3), []any{
		[]any{"intro", []any{[]any{"ann", int64(7)}, []any{"bob", nil}}},
		[]any{"body", []any{}},
	}}
	r := runtime.ArrayReplyOf("s", v, 3)
	title := runtime.Nullable(&r, "title", r.String)
	rev := runtime.Nullable(&r, "rev", r.Int)
	secs := runtime.List(&r, "sections", 2, decodeSection)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if title != nil || rev == nil || *rev != 3 {
		t.Fatalf("title %v rev %v", title, rev)
	}
	want := []section{{"intro", []note{{"ann", &at}, {"bob", nil}}}, {"body", []note{}}}
	if diff := cmp.Diff(want, secs); diff != "" {
		t.Fatalf("sections (-want +got):\n%s", diff)
	}
	// A nil list reads as nil.
	r = runtime.ValueReplyOf("s", nil)
	if got := runtime.List(&r, "sections", 2, decodeSection); got != nil || r.Err() != nil {
		t.Fatalf("nil list: %v %v", got, r.Err())
	}
}

func TestNestedReplyErrorsNameTheElement(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{[]any{[]any{"intro", []any{[]any{"ann", "x"}}}}, "script s: reply field sections[0].notes[0].at: want an integer, got a string"},
		{[]any{[]any{"intro"}}, "script s: reply field sections[0]: want an array of 2 fields, got 1"},
		{[]any{"intro"}, "script s: reply field sections[0]: want an array of 2 fields, got a string"},
		{"x", "script s: reply field sections: want an array, got a string"},
	} {
		r := runtime.ValueReplyOf("s", c.v)
		runtime.List(&r, "sections", 2, decodeSection)
		if err := r.Err(); !errors.Is(err, runtime.ErrReplyShape) || err.Error() != c.want {
			t.Errorf("%v: %v, want %s", c.v, err, c.want)
		}
	}
}
