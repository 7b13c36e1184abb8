package rueidisbackend_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/rueidisbackend"
)

// A list whose elements are each one value decodes from rueidis's own
// messages as generated code reads it (runtime.ListOf over runtime.Values):
// a script's {1, 2, 3} and {{'a'}, {'b', 'c'}}, on a real server.
func TestListOfRepliesOnRueidis(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	c, _ := conn(t, srv, 0)
	db, err := rueidisbackend.Bind(c, "t db0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := script(t, "lists", "#!lua flags=no-writes\nlocal results = {}\nfor i = 1, 3 do results[i] = i end\nreturn {results, {{'a'}, {'b', 'c'}}, {KEYS[1]}}", true)
	type lists struct {
		Counts []int64
		IDs    [][]string
		Keys   []string
	}
	decode := func(v any) (lists, error) {
		r := s.ArrayReply(v, 3)
		var out lists
		out.Counts = runtime.ListOf(&r, "counts", (*runtime.Reply).Int)
		out.IDs = runtime.ListOf(&r, "ids", (*runtime.Reply).Strings)
		out.Keys = runtime.ListOf(&r, "keys", (*runtime.Reply).String)
		return out, r.Err()
	}
	got, err := runtime.Run(ctx, db, call(s, "k"), decode)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(lists{[]int64{1, 2, 3}, [][]string{{"a"}, {"b", "c"}}, []string{"k"}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A string where an integer belongs is named by its index.
	bad := script(t, "bad", "#!lua flags=no-writes\nreturn {1, 'two'}", true)
	_, err = runtime.Run(ctx, db, call(bad, "k"), func(v any) ([]int64, error) {
		r := bad.ValueReply(v)
		out := runtime.ListOf(&r, "counts", (*runtime.Reply).Int)
		return out, r.Err()
	})
	if err == nil || err.Error() != "script bad: reply field counts[1]: want an integer, got a string" {
		t.Errorf("a string among integers: %v", err)
	}
}
