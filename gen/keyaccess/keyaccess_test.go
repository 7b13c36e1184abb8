package keyaccess

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// The access of HAN's scripts comes from Redis's key specs: a read-only check
// reads, a SET NX writes (and reads: SET may return the old value), the
// idempotency reservation reads and writes both its keys.
func TestUses(t *testing.T) {
	spec, err := keyspec.Load("../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../../lua"), "../../lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		script string
		want   map[int]Access
	}{
		{"jwks_negative_check", map[int]Access{1: {Read: true, Commands: []string{"exists"}}}},
		{"settings_snapshot_get", map[int]Access{1: {Read: true, Commands: []string{"get"}}}},
		{"elang_cache_delete", map[int]Access{1: {Write: true, Commands: []string{"del"}}}},
	} {
		got := map[int]Access{}
		for pos, a := range Of(srcs[c.script]) {
			got[pos] = *a
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.script, d)
		}
	}
	uses := Uses(srcs["idem_reserve"])
	if len(uses) != 2 || uses[0].Key.Name != "api_idem" || uses[1].Key.Name != "api_idem_lock" || !uses[0].Read || !uses[0].Write || !uses[1].Write {
		t.Errorf("idem_reserve: %+v", uses)
	}
	if m := (&Access{Read: true, Write: true}).Mode(); m != "read, write" {
		t.Errorf("mode %q", m)
	}
}

// A loop over a repeating position (KEYS[i]) reaches that position's keys,
// and an unused position none.
func TestRepeatingPosition(t *testing.T) {
	spec, err := keyspec.Load("../breaking/testdata/base/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../breaking/testdata/base/lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	uses := Uses(srcs["locks_take"])
	if len(uses) != 2 || uses[0].Position != 1 || uses[0].Read || uses[0].Write || uses[1].Position != 2 || !uses[1].Write || !cmp.Equal(uses[1].Commands, []string{"set"}) {
		t.Errorf("locks_take: %+v", uses)
	}
}
