package runtime_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/runtime"
)

// A list of one-value elements reads each element as a field of its type, from
// go-redis's []any and from a backend's Values alike.
func TestListOfDecodesEachElement(t *testing.T) {
	type decoded struct {
		Counts []int64
		IDs    [][]string
		States []string
		Flags  []bool
	}
	states := []string{"waiting", "active"}
	decode := func(v any) (decoded, error) {
		r := runtime.ArrayReplyOf("x", v, 4)
		var d decoded
		d.Counts = runtime.ListOf(&r, "counts", (*runtime.Reply).Int)
		d.IDs = runtime.ListOf(&r, "ids", (*runtime.Reply).Strings)
		d.States = runtime.ListOf(&r, "states", func(e *runtime.Reply, f string) string { return e.Enum(f, states) })
		d.Flags = runtime.ListOf(&r, "flags", (*runtime.Reply).Bool)
		return d, r.Err()
	}
	asAny := []any{
		[]any{int64(1), int64(2), int64(3)},
		[]any{[]any{"a"}, []any{"b", "c"}, []any{}},
		[]any{"active", "waiting"},
		nil,
	}
	asValues := values{
		runtime.ArrayValue(values{runtime.IntValue(1), runtime.IntValue(2), runtime.IntValue(3)}),
		runtime.ArrayValue(values{runtime.ArrayValue(values{runtime.StringValue("a")}), runtime.ArrayValue(values{runtime.StringValue("b"), runtime.StringValue("c")}), runtime.ArrayValue(values{})}),
		runtime.ArrayValue(values{runtime.StringValue("active"), runtime.StringValue("waiting")}),
		runtime.NilValue(),
	}
	want := decoded{Counts: []int64{1, 2, 3}, IDs: [][]string{{"a"}, {"b", "c"}, {}}, States: []string{"active", "waiting"}}
	for name, v := range map[string]any{"[]any": asAny, "Values": asValues} {
		got, err := decode(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}

	// A whole reply that is a list of integers.
	r := runtime.ValueReplyOf("x", []any{int64(4), int64(0)})
	if got := runtime.ListOf(&r, "counts", (*runtime.Reply).Int); r.Err() != nil || !cmp.Equal(got, []int64{4, 0}) {
		t.Errorf("whole reply: %v, %v", got, r.Err())
	}
}

// A bad element is named by its index, inside a list element's path too.
func TestListOfErrorsNameTheElement(t *testing.T) {
	for name, tc := range map[string]struct {
		v    any
		read func(r *runtime.Reply)
		want string
	}{
		"string among ints": {
			[]any{[]any{int64(1), "2"}},
			func(r *runtime.Reply) { runtime.ListOf(r, "counts", (*runtime.Reply).Int) },
			"script x: reply field counts[1]: want an integer, got a string",
		},
		"not an array": {
			[]any{int64(3)},
			func(r *runtime.Reply) { runtime.ListOf(r, "counts", (*runtime.Reply).Int) },
			"script x: reply field counts: want an array, got an integer",
		},
		"int inside a strings element": {
			[]any{[]any{[]any{"a"}, []any{"b", int64(1)}}},
			func(r *runtime.Reply) { runtime.ListOf(r, "ids", (*runtime.Reply).Strings) },
			"script x: reply field ids[1][1]: want a string, got an integer",
		},
		"in a list element": {
			[]any{[]any{[]any{[]any{int64(1), int64(2)}}, []any{[]any{"x"}}}},
			func(r *runtime.Reply) {
				runtime.List(r, "states", 1, func(e *runtime.Reply) []int64 { return runtime.ListOf(e, "counts", (*runtime.Reply).Int) })
			},
			"script x: reply field states[1].counts[0]: want an integer, got a string",
		},
	} {
		r := runtime.ArrayReplyOf("x", tc.v, 1)
		tc.read(&r)
		err := r.Err()
		if !errors.Is(err, runtime.ErrReplyShape) || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %q (ErrReplyShape)", name, err, tc.want)
		}
	}
}

// Decoding a list of n integers allocates the slice, not a reader or a
// name per element.
func TestListOfAllocatesTheSliceOnly(t *testing.T) {
	v := []any{int64(1), int64(2), int64(3), int64(4), int64(5), int64(6), int64(7), int64(8)}
	allocs := testing.AllocsPerRun(100, func() {
		r := runtime.ValueReplyOf("x", v)
		if got := runtime.ListOf(&r, "counts", (*runtime.Reply).Int); len(got) != 8 || r.Err() != nil {
			t.Fatal(got, r.Err())
		}
	})
	// The slice, the shared element reader and v boxed into the reply.
	if allocs > 3 {
		t.Errorf("%v allocations for 8 elements, want at most 3", allocs)
	}
}
