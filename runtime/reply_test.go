package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hanchat/luagen/runtime"
)

func TestArrayReplyDecodesEachType(t *testing.T) {
	v := []any{int64(1), int64(7), int64(1500), int64(1700000000123), "s", nil, "in_progress", []any{"a", "b"}, true}
	r := runtime.ArrayReplyOf("x", v, 9)
	if got := r.Bool("allowed"); !got {
		t.Error("bool")
	}
	if got := r.Int("n"); got != 7 {
		t.Error("int", got)
	}
	if got := r.Duration("d"); got != 1500*time.Millisecond {
		t.Error("duration", got)
	}
	if got := r.Time("t"); !got.Equal(time.UnixMilli(1700000000123)) {
		t.Error("time", got)
	}
	if got := r.String("s"); got != "s" {
		t.Error("string", got)
	}
	if got := r.Bytes("b"); got != nil {
		t.Error("nil bytes", got)
	}
	if got := r.Enum("state", []string{"reserved", "in_progress"}); got != "in_progress" {
		t.Error("enum", got)
	}
	if got := r.Strings("ids"); len(got) != 2 || got[1] != "b" {
		t.Error("strings", got)
	}
	if got := r.Bool("resp3"); !got {
		t.Error("RESP3 boolean")
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestReplyShapeErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		v    any
		n    int
		read func(*runtime.Reply)
	}{
		"not an array":      {int64(1), 1, func(r *runtime.Reply) { r.Int("a") }},
		"too few fields":    {[]any{int64(1)}, 2, func(r *runtime.Reply) { r.Int("a") }},
		"string for int":    {[]any{"1"}, 1, func(r *runtime.Reply) { r.Int("a") }},
		"2 for bool":        {[]any{int64(2)}, 1, func(r *runtime.Reply) { r.Bool("a") }},
		"int for string":    {[]any{int64(2)}, 1, func(r *runtime.Reply) { _ = r.String("a") }},
		"negative duration": {[]any{int64(-1)}, 1, func(r *runtime.Reply) { r.Duration("a") }},
		"unknown enum":      {[]any{"x"}, 1, func(r *runtime.Reply) { r.Enum("a", []string{"y"}) }},
		"int in strings":    {[]any{[]any{"a", int64(1)}}, 1, func(r *runtime.Reply) { r.Strings("a") }},
	} {
		r := runtime.ArrayReplyOf("x", tc.v, tc.n)
		tc.read(&r)
		if err := r.Err(); !errors.Is(err, runtime.ErrReplyShape) {
			t.Errorf("%s: err = %v, want ErrReplyShape", name, err)
		}
	}
	// The first problem sticks and later reads are zero.
	r := runtime.ArrayReplyOf("x", []any{"no", int64(5)}, 2)
	r.Int("a")
	if got := r.Int("b"); got != 0 || r.Err() == nil {
		t.Fatal("error did not stick")
	}
}
