package runtime_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
)

// fill appends one of every argument type, as TestInputEncodesEveryArgumentType.
func fill(in *runtime.Input) {
	n, d, b, s, tok := int64(7), 1500*time.Microsecond, true, "x", "abcdefghijklmnop"
	in.Key("k", "a:1")
	in.Int("int", 12345, 0, 20000)
	in.Bool(true)
	in.Bool(false)
	in.Duration("dur", 2500*time.Microsecond, 0, time.Second)
	in.Millis(time.Hour)
	in.String("str", "hello", 5)
	in.Bytes("bytes", []byte("by"), 2)
	in.Token("tok", tok)
	in.OptInt("oint", nil, 0, 1)
	in.OptInt("oint", &n, 0, 10)
	in.OptDuration("odur", &d, 0, time.Second)
	in.OptBool(&b)
	in.OptString("ostr", &s, 1)
	in.OptBytes("obytes", nil, 1)
}

// A StringArgs script's Input holds the strings a boxed Input would send, in
// the same order, and still runs on go-redis (which gets them boxed).
func TestStringArgsInputSendsWhatTheBoxedInputSends(t *testing.T) {
	src := "return {KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13], ARGV[14]}"
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	boxed := runtime.MustScript("boxed", src, sha, false)
	strs := runtime.MustScript("strs", src, sha, false, runtime.StringArgs)
	a, b := boxed.Input(1, 14), strs.Input(1, 14)
	fill(&a)
	fill(&b)
	if a.Err() != nil || b.Err() != nil {
		t.Fatal(a.Err(), b.Err())
	}
	want := []string{"a:1", "12345", "1", "0", "2", "3600000", "hello", "by", "abcdefghijklmnop", "", "7", "1", "1", "x", ""}
	if diff := cmp.Diff(want, a.Strings()); diff != "" {
		t.Errorf("boxed input's strings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, b.Strings()); diff != "" {
		t.Errorf("StringArgs input's strings (-want +got):\n%s", diff)
	}
	if runtime.InputNumArgs(&b) != len(want) || b.NumKeys() != 1 || runtime.InputArg(&b, 1) != "12345" {
		t.Errorf("numArgs %d, NumKeys %d, arg(1) %v", runtime.InputNumArgs(&b), b.NumKeys(), runtime.InputArg(&b, 1))
	}

	redistest.Need(t)
	srv := redistest.Start(t)
	c := srv.Client(0)
	db, err := runtime.Bind(c, "db0", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := runtime.Run(context.Background(), db, b, func(v any) ([]any, error) { return v.([]any), nil })
	if err != nil {
		t.Fatal(err)
	}
	var gotStrs []string
	for _, v := range got {
		gotStrs = append(gotStrs, v.(string))
	}
	if diff := cmp.Diff(want, gotStrs); diff != "" {
		t.Errorf("what the server got (-want +got):\n%s", diff)
	}
}

// values is a Values over []runtime.Value, as a backend's own messages.
type values []runtime.Value

func (v values) Len() int               { return len(v) }
func (v values) At(i int) runtime.Value { return v[i] }

// A reply handed over as Values decodes exactly as its []any twin, nested
// lists, nils and booleans included, and a wrong shape fails alike.
func TestValuesReplyDecodesAsItsAnyTwin(t *testing.T) {
	asAny := []any{int64(1), int64(1500), "s", nil, []any{"a", "b"}, []any{[]any{int64(3), "x"}, []any{int64(4), "y"}}, true}
	asValues := values{runtime.IntValue(1), runtime.IntValue(1500), runtime.StringValue("s"), runtime.NilValue(),
		runtime.ArrayValue(values{runtime.StringValue("a"), runtime.StringValue("b")}),
		runtime.ArrayValue(values{runtime.ArrayValue(values{runtime.IntValue(3), runtime.StringValue("x")}), runtime.ArrayValue(values{runtime.IntValue(4), runtime.StringValue("y")})}),
		runtime.BoolValue(true)}
	type entry struct {
		N int64
		S string
	}
	type decoded struct {
		Allowed bool
		D       time.Duration
		S       string
		B       []byte
		Strs    []string
		Entries []entry
		Flag    bool
	}
	decode := func(v any) (decoded, error) {
		r := runtime.ArrayReplyOf("x", v, 7)
		var d decoded
		d.Allowed = r.Bool("allowed")
		d.D = r.Duration("d")
		d.S = r.String("s")
		d.B = r.Bytes("b")
		d.Strs = r.Strings("strs")
		d.Entries = runtime.List(&r, "entries", 2, func(e *runtime.Reply) entry { return entry{e.Int("n"), e.String("s")} })
		d.Flag = r.Bool("flag")
		return d, r.Err()
	}
	a, errA := decode(asAny)
	v, errV := decode(asValues)
	if errA != nil || errV != nil {
		t.Fatal(errA, errV)
	}
	want := decoded{true, 1500 * time.Millisecond, "s", nil, []string{"a", "b"}, []entry{{3, "x"}, {4, "y"}}, true}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("[]any (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("Values (-want +got):\n%s", diff)
	}

	// A wrong shape: the same error from both.
	badAny := []any{int64(1), "not ms", "s", nil, []any{"a"}, nil, int64(2)}
	badValues := values{runtime.IntValue(1), runtime.StringValue("not ms"), runtime.StringValue("s"), runtime.NilValue(),
		runtime.ArrayValue(values{runtime.StringValue("a")}), runtime.NilValue(), runtime.IntValue(2)}
	_, errA = decode(badAny)
	_, errV = decode(badValues)
	var re *runtime.ReplyError
	if !errors.As(errV, &re) || errA == nil || errA.Error() != errV.Error() {
		t.Errorf("errors: []any %v, Values %v; want the same ReplyError", errA, errV)
	}
	if _, err := decode(values{runtime.OtherValue("a double")}); err == nil || err.Error() != `script x: reply: want an array of 7 fields, got 1` {
		t.Errorf("short Values: %v", err)
	}
	r := runtime.ValueReplyOf("x", values{runtime.OtherValue("a double")})
	_ = r.Strings("f")
	if err := r.Err(); err == nil || !errors.As(err, &re) || re.Reason != "want a string, got a double" {
		t.Errorf("an element of another type: %v", err)
	}
}
