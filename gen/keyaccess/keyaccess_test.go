package keyaccess

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// The access of a script comes from Redis's key specs: a GET reads, a SET
// writes (and reads: SET may return the old value), an INCRBY reads and writes,
// a PEXPIRE writes.
func TestUses(t *testing.T) {
	spec, err := keyspec.Load("../testdata/small/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../testdata/small/lua"), "lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		script string
		want   map[int]Access
	}{
		{"peek", map[int]Access{1: {Read: true, Commands: []string{"get"}}}},
		{"put", map[int]Access{1: {Read: true, Write: true, Commands: []string{"set"}}}},
		{"work", map[int]Access{1: {Read: true, Write: true, Commands: []string{"get", "pexpire"}}, 2: {Read: true, Write: true, Commands: []string{"incrby", "pexpire"}}}},
	} {
		got := map[int]Access{}
		for pos, a := range Of(srcs[c.script]) {
			got[pos] = *a
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.script, d)
		}
	}
	uses := Uses(srcs["work"])
	names := []string{}
	for _, u := range uses {
		names = append(names, u.Key.Name)
		if !u.Read || !u.Write {
			t.Errorf("work: %s: %+v, want read and write", u.Key.Name, u)
		}
	}
	if d := cmp.Diff([]string{"t_lock", "t_item", "t_rate"}, names); d != "" {
		t.Errorf("work's keys (-want +got):\n%s", d)
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
