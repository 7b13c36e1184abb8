package tests

import (
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/luatest"
)

// t0 is the harness clock's start: a fixed instant, so tests are repeatable.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// harnessVM1 runs vm1's generated wrappers on a gopher-lua harness with a fake
// clock; every run is checked for undeclared keys and missing TTLs at cleanup.
func harnessVM1(t *testing.T) (*luatest.Server, *vm1.Scripts) {
	t.Helper()
	h, _, scripts := rtHarness(t)
	return h, scripts
}

// rtHarness is harnessVM1 that also hands out the Scripter, so a test can read
// the commands each run sent.
func rtHarness(t *testing.T) (*luatest.Server, *luatest.Scripter, *vm1.Scripts) {
	t.Helper()
	h := luatest.NewServer(luatest.NewClock(t0))
	sc := h.Scripter()
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: sc, DB1: sc, DB2: sc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sc.Check(); err != nil {
			t.Errorf("a script broke a rule (undeclared key or a written key without TTL): %v", err)
		}
	})
	return h, sc, scripts
}
