package acl_test

import (
	"errors"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/internal/specedit"
)

// HAN's spec with DB1 moved to a server of its own (R6): each server's aclfile
// grants api_backend only what the scripts of its databases take, the channels
// only where they are placed, the stub's cutover commands only beside the stub;
// together they grant exactly what the one-server aclfile did.
func TestSplitServerACLs(t *testing.T) {
	src, err := os.ReadFile("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	split, err := specedit.MoveDB(src, specedit.HANRealtime)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := keyspec.Parse("keyspec.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := keyspec.Parse("keyspec.yaml", split)
	if err != nil {
		t.Fatal(err)
	}
	lua := os.DirFS("../../../lua")
	wholeSrcs, err := compiler.Load(whole, lua, "lua")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, lua, "lua")
	if err != nil {
		t.Fatal(err)
	}
	in := spec.Instance("vm1")
	own, warnOwn, err := acl.DeriveServer(spec, in, "", srcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, warnRT, err := acl.DeriveServer(spec, in, "realtime", srcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, _, err := acl.Derive(whole, whole.Instance("vm1"), wholeSrcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range append(warnOwn, warnRT...) {
		if strings.Contains(w, "prefix") {
			t.Errorf("a prefix warning on a split server: %s", w)
		}
	}
	ownLine, rtLine := " "+own[1].Line()+" ", " "+rt[1].Line()+" "
	for _, want := range []string{" ~han:api:* ", " ~han:legacy:* ", " +scan ", " +unlink ", " +select "} {
		if !strings.Contains(ownLine, want) {
			t.Errorf("vm1's own server lacks %q: %s", want, ownLine)
		}
	}
	for _, never := range []string{"han:rt:", "han:coord:", "han:settings:", "&", "+publish", "+subscribe"} {
		if strings.Contains(ownLine, never) {
			t.Errorf("vm1's own server grants %q, which lives on realtime: %s", never, ownLine)
		}
	}
	for _, want := range []string{" ~han:rt:* ", " ~han:coord:* ", " ~han:settings:snapshot:* ", " &han:rt:* ", " +publish ", " +subscribe ", " +select "} {
		if !strings.Contains(rtLine, want) {
			t.Errorf("realtime lacks %q: %s", want, rtLine)
		}
	}
	for _, never := range []string{"han:api:", "han:legacy:", "+scan", "+unlink"} {
		if strings.Contains(rtLine, never) {
			t.Errorf("realtime grants %q, which stays on vm1's own server: %s", never, rtLine)
		}
	}
	// The realtime server keeps nothing on disk: its default user gets nothing.
	if rt[0].Line() != acl.DefaultLine {
		t.Errorf("realtime's default user: %s", rt[0].Line())
	}
	if !strings.Contains(own[0].Line(), "~han:api:*") || strings.Contains(own[0].Line(), "han:rt:") {
		t.Errorf("the own server's AOF default user: %s", own[0].Line())
	}
	// Together: exactly the one-server grants.
	union := func(users ...acl.User) []string {
		seen := map[string]bool{}
		for _, u := range users {
			for _, g := range append(append(append([]string{}, u.Keys...), u.Channels...), u.Commands...) {
				seen[g] = true
			}
		}
		var out []string
		for g := range seen {
			out = append(out, g)
		}
		sort.Strings(out)
		return out
	}
	if got, want := strings.Join(union(own[1], rt[1]), " "), strings.Join(union(before[1]), " "); got != want {
		t.Errorf("the two servers grant\n%s\nthe one server granted\n%s", got, want)
	}
	if _, _, err := acl.DeriveServer(spec, in, "nosuch", srcs, nil); !errors.Is(err, acl.ErrNoServer) {
		t.Errorf("an undeclared server: %v", err)
	}
}
