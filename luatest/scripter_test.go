package luatest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hanchat/luagen/luatest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

func TestScripterRunsRuntimeScriptsWithNOSCRIPTRecovery(t *testing.T) {
	ctx := context.Background()
	h := luatest.NewServer(nil)
	sc := h.Scripter()
	src := "redis.call('SET', KEYS[1], ARGV[1], 'PX', 1000)\nreturn redis.call('GET', KEYS[1])"
	script := runtime.MustScript("set_get", src, sha1Hex(src), false)
	v, err := script.Run(ctx, sc, []string{"k"}, "v")
	if err != nil || v != "v" {
		t.Fatalf("Run = %v, %v", v, err)
	}
	if ex := sc.ScriptExists(ctx, script.SHA1()).Val(); !ex[0] {
		t.Fatal("the runtime did not load the script after NOSCRIPT")
	}
	if err := sc.Check(); err != nil {
		t.Fatal(err)
	}
	if n := len(sc.Results()); n != 1 {
		t.Fatalf("%d runs recorded, want 1 (the NOSCRIPT attempt runs nothing)", n)
	}

	nilScript := runtime.MustScript("nil", "return false", sha1Hex("return false"), false)
	if v, err := nilScript.Run(ctx, sc, nil); v != nil || err != nil {
		t.Fatalf("a nil reply: %v, %v", v, err)
	}
	errScript := runtime.MustScript("e", "return redis.error_reply('NOT_OWNER x')", sha1Hex("return redis.error_reply('NOT_OWNER x')"), false)
	if _, err := errScript.Run(ctx, sc, nil); !errors.Is(err, runtime.ErrorCode("NOT_OWNER")) {
		t.Fatalf("an error reply: %v", err)
	}
	writeRO := runtime.MustScript("w", src, sha1Hex(src), true)
	if _, err := writeRO.Run(ctx, sc, []string{"k"}, "v"); err == nil {
		t.Fatal("a writing script ran through EVALSHA_RO")
	}
	if sc.EvalSha(ctx, "0000", nil).Err() == nil || !redis.HasErrorPrefix(sc.EvalSha(ctx, "0000", nil).Err(), "NOSCRIPT") {
		t.Fatal("unknown SHA1 must answer NOSCRIPT")
	}
}

func sha1Hex(src string) string {
	s, err := luatest.Load("x.lua", []byte(src))
	if err != nil {
		panic(err)
	}
	return s.SHA1()
}
