package specedit

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
)

// The R6 edit of HAN's spec parses: db1 and the realtime channels are on the
// new server, db0 and db2 stay, and the spec's comments survive.
func TestMoveDBOnHANSpec(t *testing.T) {
	src, err := os.ReadFile("../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := MoveDB(src, HANRealtime)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := keyspec.Parse("keyspec.yaml", out)
	if err != nil {
		t.Fatalf("the split spec does not parse: %v", err)
	}
	in := spec.Instance("vm1")
	rt := in.ServerNamed("realtime")
	if rt == nil || !in.Split() || rt.Persistence != keyspec.PersistNone || rt.EvictionPolicy != "volatile-lru" {
		t.Fatalf("realtime server: %+v", rt)
	}
	for _, d := range in.DBs {
		if want := d.Name == "db1"; (d.ServerOf() == rt) != want {
			t.Errorf("%s on realtime: %v, want %v", d.Name, d.ServerOf() == rt, want)
		}
	}
	for _, c := range spec.ChannelsOf(in) {
		if c.ServerOf() != rt {
			t.Errorf("channel %s is not on realtime", c.Name)
		}
	}
	if !strings.Contains(string(out), "# CONTRADICTION 3") {
		t.Error("the spec's comments were lost")
	}
	if _, err := MoveDB(src, Split{Instance: "vm1", DB: "db9", Server: "x", Section: "doc: x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a database that does not exist: %v", err)
	}
	if _, err := MoveDB(out, HANRealtime); err == nil {
		t.Error("the same server added twice")
	}
}
