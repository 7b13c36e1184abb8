package scriptmetrics_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/promtest"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/scriptmetrics"
	"github.com/prometheus/client_golang/prometheus"
)

func TestCode(t *testing.T) {
	for err, want := range map[error]string{
		&runtime.ScriptError{Script: "s", Code: "NOT_OWNER", Message: "NOT_OWNER x"}:   "NOT_OWNER",
		&runtime.ScriptError{Script: "s", Code: "weird-code", Message: "weird-code x"}: "other",
		&runtime.OutcomeUnknownError{Script: "s", Err: context.DeadlineExceeded}:       "outcome_unknown",
		fmt.Errorf("script s: not sent: %w", context.Canceled):                         "not_sent",
		errors.New("dial tcp: refused"):                                                "other",
	} {
		if got := scriptmetrics.Code(err); got != want {
			t.Errorf("Code(%v) = %q, want %q", err, got, want)
		}
	}
}

// scriptOf is a script of source src, named name.
func scriptOf(name, src string) *runtime.Script {
	sum := sha1.Sum([]byte(src))
	return runtime.MustScript(name, src, hex.EncodeToString(sum[:]), false)
}

// Two Metrics on one registry (two generated packages of one process) share
// its collectors: calls of both count together, and the NOSCRIPT reloads of
// both script sets are exported, each script once.
func TestMetricsOnOneRegistryCountTogether(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	c := redistest.Start(t).Client(0)
	a, b := scriptOf("one", "return 1"), scriptOf("two", "return 2")
	reg := prometheus.NewRegistry()
	m1, err := scriptmetrics.New(reg, a)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := scriptmetrics.New(reg, b, a)
	if err != nil {
		t.Fatalf("a second Metrics on the registry: %v", err)
	}
	for _, s := range []*runtime.Script{a, b} {
		if _, err := s.Run(ctx, c, nil); err != nil { // NOSCRIPT, loaded, run
			t.Fatal(err)
		}
	}
	m1.ObserveCall(a, time.Millisecond, nil)
	m2.ObserveCall(a, time.Millisecond, nil)
	m2.ObserveCall(b, time.Millisecond, errors.New("dial tcp: refused"))
	if got := promtest.Value(t, reg, "luagen_script_calls_total", map[string]string{"script": "one"}); got != 2 {
		t.Errorf("calls of one: %v, want 2 (one from each Metrics)", got)
	}
	if got := promtest.Value(t, reg, "luagen_script_errors_total", map[string]string{"script": "two", "code": "other"}); got != 1 {
		t.Errorf("errors of two: %v, want 1", got)
	}
	for _, name := range []string{"one", "two"} {
		if got := promtest.Value(t, reg, "luagen_script_noscript_reloads_total", map[string]string{"script": name}); got != 1 {
			t.Errorf("reloads of %s: %v, want 1", name, got)
		}
	}
}
