package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/hanchat/luagen/runtime/keypart"
	"github.com/redis/go-redis/v9"
)

// previousSlidingInput is rate_limit_sliding's input function as luagen wrote it
// before the runtime.Input builder (one `if err` block per argument, the script
// name in every check), kept here to compare the two shapes in one run. The
// check functions it called were runtime's (ArgInt, ArgDuration, ...), removed
// since; previousArgInt and the others below are their bodies.
func previousSlidingInput(bucket vm1.RateLimitSlidingBucket, a vm1.RateLimitSlidingArgs) ([]string, []any, error) {
	argv := make([]any, 6)
	var err error
	var bucketName string
	switch k := bucket.(type) {
	case vm1.APIRLUserKey:
		bucketName = k.String()
	case vm1.APIRLIPKey:
		bucketName = k.String()
	case vm1.APIRLDialogKey:
		bucketName = k.String()
	case vm1.APIRLServiceKey:
		bucketName = k.String()
	}
	if bucketName == "" {
		return nil, nil, &runtime.ArgError{Script: "rate_limit_sliding", Arg: "KEYS bucket", Reason: "no key of a type this position takes (build it with its key builder)"}
	}
	if argv[0], err = previousArgInt("rate_limit_sliding", "limit", a.Limit, 1, 10000); err != nil {
		return nil, nil, err
	}
	if argv[1], err = previousArgDuration("rate_limit_sliding", "window", a.Window, 1*time.Millisecond, 24*time.Hour); err != nil {
		return nil, nil, err
	}
	if argv[2], err = previousArgDuration("rate_limit_sliding", "jitter", a.Jitter, 0, 2*time.Second); err != nil {
		return nil, nil, err
	}
	if argv[3], err = previousArgInt("rate_limit_sliding", "cost", a.Cost, 1, 10000); err != nil {
		return nil, nil, err
	}
	argv[4] = previousArgBool(a.Peek)
	if argv[5], err = previousArgToken("rate_limit_sliding", "nonce", a.Nonce); err != nil {
		return nil, nil, err
	}
	return []string{bucketName}, argv, nil
}

// previousArgInt, previousArgDuration, previousArgBool and previousArgToken
// check one argument and return it encoded for ARGV, as runtime's Arg*
// functions did.
func previousArgInt(script, arg string, v, min, max int64) (any, error) {
	if v < min || v > max {
		return nil, &runtime.ArgError{Script: script, Arg: arg, Reason: fmt.Sprintf("want %d..%d", min, max)}
	}
	return v, nil
}

func previousArgDuration(script, arg string, d, min, max time.Duration) (any, error) {
	if d < min || d > max {
		return nil, &runtime.ArgError{Script: script, Arg: arg, Reason: fmt.Sprintf("want %s..%s", min, max)}
	}
	return d.Milliseconds(), nil
}

func previousArgBool(v bool) any {
	if v {
		return int64(1)
	}
	return int64(0)
}

func previousArgToken(script, arg, v string) (any, error) {
	if !keypart.Token(v) {
		return nil, &runtime.ArgError{Script: script, Arg: arg, Reason: "want " + strconv.Itoa(keypart.TokenMinLen) + ".." + strconv.Itoa(keypart.TokenMaxLen) + " characters of [A-Za-z0-9_-]"}
	}
	return v, nil
}

func previousSlidingDecode(v any) (vm1.RateDecision, error) {
	r := vm1.RateLimitSlidingScript.ArrayReply(v, 4)
	var out vm1.RateDecision
	out.Allowed = r.Bool("allowed")
	out.Remaining = r.Int("remaining")
	out.RetryAfter = r.Duration("retry_after")
	out.ResetAt = r.Time("reset_at")
	return out, r.Err()
}

// builderSlidingInput is rate_limit_sliding's input function as luagen writes
// it now (generated/vm1 keeps it and bucketKey unexported; here a key's String
// is its name).
func builderSlidingInput(bucket vm1.RateLimitSlidingBucket, a vm1.RateLimitSlidingArgs) runtime.Input {
	in := vm1.RateLimitSlidingScript.Input(1, 6)
	in.Key("bucket", bucketKey(bucket))
	in.Int("limit", a.Limit, 1, 10000)
	in.Duration("window", a.Window, 1*time.Millisecond, 24*time.Hour)
	in.Duration("jitter", a.Jitter, 0, 2*time.Second)
	in.Int("cost", a.Cost, 1, 10000)
	in.Bool(a.Peek)
	in.Token("nonce", a.Nonce)
	return in
}

func bucketKey(k any) string {
	switch k := k.(type) {
	case vm1.APIRLUserKey:
		return k.String()
	case vm1.APIRLIPKey:
		return k.String()
	case vm1.APIRLDialogKey:
		return k.String()
	case vm1.APIRLServiceKey:
		return k.String()
	}
	return ""
}

// previousSliding is the previous wrapper body (nil-client check, input, Run, decode).
func previousSliding(ctx context.Context, c redis.Scripter, bucket vm1.RateLimitSlidingBucket, args vm1.RateLimitSlidingArgs) (vm1.RateDecision, error) {
	var zero vm1.RateDecision
	if c == nil {
		return zero, fmt.Errorf("script %s: %s %s: %w", "rate_limit_sliding", "vm1", "db0", runtime.ErrNoClient)
	}
	keys, argv, err := previousSlidingInput(bucket, args)
	if err != nil {
		return zero, err
	}
	v, err := vm1.RateLimitSlidingScript.Run(ctx, c, keys, argv...)
	if err != nil {
		return zero, err
	}
	return previousSlidingDecode(v)
}

// BenchmarkWrapperShape compares, in one run, the generated wrapper of
// rate_limit_sliding as luagen writes it now (one runtime.Input call per key and
// argument, runtime.Run) with the shape it had before (previousSliding), and
// with a hand-written go-redis EvalSha of the same values: first building the
// call's input alone (no network), then the whole call on one redis-server
// (serial: ns/op, allocs/op). Each call uses a fresh nonce from a prepared list
// (the nonce's string is not counted) and a limit high enough to always allow.
//
//	cd bench && go test -run '^$' -bench BenchmarkWrapperShape -benchmem -count 5
func BenchmarkWrapperShape(b *testing.B) {
	ctx := context.Background()
	key, err := vm1.NewAPIRLDialogKey("0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21", 86400)
	if err != nil {
		b.Fatal(err)
	}
	nonces := make([]string, 1<<16)
	for i := range nonces {
		nonces[i] = fmt.Sprintf("nonce-%016d", i)
	}
	args := vm1.RateLimitSlidingArgs{Limit: 10000, Window: time.Millisecond, Jitter: time.Second, Cost: 1}

	b.Run("input/previous", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			args.Nonce = nonces[i&(len(nonces)-1)]
			i++
			if _, _, err := previousSlidingInput(key, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("input/builder", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			args.Nonce = nonces[i&(len(nonces)-1)]
			i++
			if in := builderSlidingInput(key, args); in.Err() != nil {
				b.Fatal(in.Err())
			}
		}
	})

	srv := redistest.Start(b)
	c := srv.Client(vm1.DB0)
	if err := runtime.Preload(ctx, c, vm1.AllScripts()...); err != nil {
		b.Fatal(err)
	}
	scripts, err := vm1.NewScripts(vm1.Clients{DB0: c})
	if err != nil {
		b.Fatal(err)
	}
	keys := []string{key.String()}
	calls := []struct {
		name string
		call func(nonce string) error
	}{
		{"call/go-redis-EvalSha", func(nonce string) error {
			return c.EvalSha(ctx, vm1.RateLimitSlidingSHA1, []string{keys[0]}, args.Limit, args.Window.Milliseconds(), args.Jitter.Milliseconds(), args.Cost, int64(0), nonce).Err()
		}},
		{"call/previous", func(nonce string) error {
			a := args
			a.Nonce = nonce
			_, err := previousSliding(ctx, c, key, a)
			return err
		}},
		{"call/builder", func(nonce string) error {
			a := args
			a.Nonce = nonce
			_, err := scripts.RateLimitSliding(ctx, key, a)
			return err
		}},
	}
	for _, cl := range calls {
		b.Run(cl.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := cl.call(nonces[i&(len(nonces)-1)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
