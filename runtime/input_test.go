package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/runtime"
)

// callOf is a call of s with one key and the given increments (each within
// 0..10, so a negative one is refused).
func callOf(s *runtime.Script, key string, incr ...int64) runtime.Input {
	in := s.Input(1, len(incr))
	in.Key("n", key)
	for _, v := range incr {
		in.Int("incr", v, 0, 10)
	}
	return in
}

var inputScript = runtime.MustScript("inputs", "return 1", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", false)

func TestInputEncodesEveryArgumentType(t *testing.T) {
	n, d, b, s, tok := int64(7), 1500*time.Microsecond, true, "x", "abcdefghijklmnop"
	in := inputScript.Input(1, 20)
	in.Key("k", "a:1")
	in.Int("int", 5, 0, 10)
	in.Bool(true)
	in.Bool(false)
	in.Duration("dur", 2500*time.Microsecond, 0, time.Second)
	in.Millis(time.Hour)
	in.String("str", "hello", 5)
	in.Bytes("bytes", []byte("by"), 2)
	in.Token("tok", tok)
	in.Hex("hex", "0a1b", 4)
	in.UUID("uuid", "0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21")
	in.Name("name", "a.b_c-d", 8)
	in.OptInt("oint", nil, 0, 1)
	in.OptInt("oint", &n, 0, 10)
	in.OptDuration("odur", &d, 0, time.Second)
	in.OptBool(&b)
	in.OptString("ostr", &s, 1)
	in.OptBytes("obytes", nil, 1)
	in.OptToken("otok", &tok)
	in.OptHex("ohex", nil, 4)
	in.OptUUID("ouuid", nil)
	in.OptName("oname", &s, 1)
	if err := in.Err(); err != nil {
		t.Fatal(err)
	}
	keys, args := runtime.InputParts(in)
	want := []any{int64(5), int64(1), int64(0), int64(2), int64(3600000), "hello", []byte("by"), tok, "0a1b",
		"0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", "a.b_c-d", "", int64(7), int64(1), int64(1), "x", "", tok, "", "", "x"}
	if diff := cmp.Diff([]string{"a:1"}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

func TestInputKeepsTheFirstRefusal(t *testing.T) {
	cases := []struct {
		name  string
		build func(in *runtime.Input)
		arg   string
	}{
		{"missing key", func(in *runtime.Input) { in.Key("bucket", ""); in.Int("limit", -1, 0, 1) }, "KEYS bucket"},
		{"int", func(in *runtime.Input) { in.Key("k", "a"); in.Int("limit", 11, 0, 10); in.Token("nonce", "") }, "limit"},
		{"duration", func(in *runtime.Input) {
			in.Duration("window", -time.Second, 0, time.Second)
			in.Int("limit", 11, 0, 10)
		}, "window"},
		{"string", func(in *runtime.Input) { in.String("s", "toolong", 3) }, "s"},
		{"bytes", func(in *runtime.Input) { in.Bytes("b", []byte("toolong"), 3) }, "b"},
		{"token", func(in *runtime.Input) { in.Token("owner", "short") }, "owner"},
		{"hex", func(in *runtime.Input) { in.Hex("fp", "ABCD", 4) }, "fp"},
		{"uuid", func(in *runtime.Input) { in.UUID("id", "nope") }, "id"},
		{"name", func(in *runtime.Input) { in.Name("n", "a:b", 8) }, "n"},
		{"empty optional string", func(in *runtime.Input) { e := ""; in.OptString("os", &e, 8); in.Int("x", 99, 0, 1) }, "os"},
		{"empty optional bytes", func(in *runtime.Input) { in.OptBytes("ob", []byte{}, 8) }, "ob"},
		{"optional out of range", func(in *runtime.Input) { v := int64(5); in.OptInt("oi", &v, 0, 1) }, "oi"},
		{"shared placeholder", func(in *runtime.Input) {
			in.Key("a", "x:{u1}:a")
			in.Key("b", "x:{u2}:b")
			in.Same("user_id", "x:{u1}:a", 1, "x:{u2}:b", 1)
		}, "KEYS {user_id}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := inputScript.Input(2, 2)
			c.build(&in)
			var ae *runtime.ArgError
			if !errors.As(in.Err(), &ae) || !errors.Is(in.Err(), runtime.ErrInvalidArg) {
				t.Fatalf("err = %v, want an ArgError", in.Err())
			}
			if ae.Script != "inputs" || ae.Arg != c.arg {
				t.Fatalf("refusal names script %q argument %q, want inputs %q", ae.Script, ae.Arg, c.arg)
			}
			// Nothing is sent for a refused input.
			db, _ := runtime.Bind(nil, "t db0", 0, nil)
			if _, err := runtime.Run(context.Background(), db, in, func(any) (int, error) { return 1, nil }); err == nil {
				t.Fatal("Run sent a refused input")
			}
		})
	}
}

func TestInputPrefixedKeys(t *testing.T) {
	in := inputScript.PrefixedInput("acme:", 2, 0)
	in.PrefixedKey("a", "acme:x:1", "acme:")
	in.PrefixedKey("b", "acme:x:1", "acme:")
	in.Same("id", "acme:x:1", 1, "acme:x:1", 1)
	if err := in.Err(); err != nil {
		t.Fatal(err)
	}
	in.PrefixedKey("c", "other:x:1", "other:")
	if err := in.Err(); err == nil || !strings.Contains(err.Error(), "KEYS c") || !strings.Contains(err.Error(), "another deployment prefix") {
		t.Fatalf("key of another prefix: %v", err)
	}
}

func TestRunWithoutClientNamesTheDatabase(t *testing.T) {
	db, err := runtime.Bind(nil, "app db2", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = runtime.Run(context.Background(), db, callOf(inputScript, "k"), func(any) (int, error) { return 1, nil })
	if !errors.Is(err, runtime.ErrNoClient) || err.Error() != "script inputs: app db2: no client for the script's database" {
		t.Fatalf("err = %v", err)
	}
}

// Building an Input allocates the one slice of its command and nothing else for
// values that need no boxing (constant keys, integers below 256, booleans as 0/1).
func TestInputAllocatesOnlyItsCommand(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		in := inputScript.Input(2, 4)
		in.Key("a", "x:1")
		in.Key("b", "x:2")
		in.Int("i", 7, 0, 10)
		in.Bool(true)
		in.Duration("d", 100*time.Millisecond, 0, time.Second)
		in.OptInt("o", nil, 0, 1)
		if in.Err() != nil {
			panic(in.Err())
		}
		sinkInput = in
	})
	if allocs != 1 {
		t.Fatalf("an Input of small values took %v allocations, want 1 (its command)", allocs)
	}
}

var sinkInput runtime.Input
