package tests

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	replies "github.com/hanchat/luagen/gen/testdata/features/replies/golden/app"
	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// Lists whose elements are each one value (of: int as the whole reply, of:
// strings and of: enum as fields), through the generated wrappers: what the
// Lua returns ({1, 2, 3}; {{'a'}, {'ba', 'bb'}}) reads as []int64 and
// [][]string, on the harness and on a server started from the generated
// aclfile, as the application user.
func TestListOfRepliesThroughTheWrappers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const title, letters = "6f1d2f9e-8c1a-4c59-9d0e-2b7a1f3c4d5e", "0b5e8d4c-3a2f-4e1b-8c7d-6a5f4e3d2c1b"
	seed := [][]any{
		{"hset", "doc:" + title, "title", "abc", "rev", "7"},
		{"hset", "doc:" + letters, "a", "1", "ba", "2", "bb", "3"},
	}
	h := luatest.NewServer(nil)
	for _, c := range seed {
		if _, err := h.Do(c...); err != nil {
			t.Fatal(err)
		}
	}
	srv, clients := featureServer(t, "../gen/testdata/features/replies", "app")
	if err := runtime.Preload(ctx, clients["app_loader"], replies.AllScripts()...); err != nil {
		t.Fatalf("SCRIPT LOAD as the loader: %v", err)
	}
	for _, c := range seed {
		if err := srv.Client(0, admin).Do(ctx, c...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	sc := h.Scripter()
	for name, db := range map[string]redis.Scripter{"luatest": sc, "redis": clients["app"]} {
		s, err := replies.NewScripts(replies.Clients{DB0: db})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			id     string
			counts []int64
			fields replies.DocFieldsResult
		}{
			{title, []int64{1, 2, 3}, replies.DocFieldsResult{Groups: [][]string{{"rev"}, {"title"}}, Tones: []replies.Tone{replies.ToneNeutral, replies.ToneWarm}, Total: 2}},
			{letters, []int64{1, 3, 0}, replies.DocFieldsResult{Groups: [][]string{{"a"}, {"ba", "bb"}}, Tones: []replies.Tone{replies.ToneNeutral, replies.ToneWarm}, Total: 3}},
			{"00000000-0000-4000-8000-000000000000", []int64{0, 0, 0}, replies.DocFieldsResult{}},
		} {
			doc, err := replies.NewDocKey(c.id)
			if err != nil {
				t.Fatal(err)
			}
			counts, err := s.DocCounts(ctx, doc)
			if err != nil || !cmp.Equal(counts, c.counts) {
				t.Errorf("%s: DocCounts(%s) = %v, %v; want %v", name, c.id, counts, err, c.counts)
			}
			fields, err := s.DocFields(ctx, doc)
			if err != nil {
				t.Errorf("%s: DocFields(%s): %v", name, c.id, err)
			}
			if diff := cmp.Diff(c.fields, fields, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: DocFields(%s) (-want +got):\n%s", name, c.id, diff)
			}
		}
	}
	if err := sc.Check(); err != nil {
		t.Errorf("a script broke a rule on the harness: %v", err)
	}
}
