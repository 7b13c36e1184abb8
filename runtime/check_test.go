package runtime_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/runtime"
)

// hostile are values a caller might pass to forge another key or break a pattern.
var hostile = []string{"", " ", "a:b", "a*", "a?", "a[1]", "{tag}", "a\nb", "a\tb", strings.Repeat("a", 300), "ÄÖ", "shop:api:*"}

func TestKeyPartChecksRefuseForgingValues(t *testing.T) {
	for _, v := range hostile {
		for name, err := range map[string]error{
			"uuid": runtime.CheckUUID("k", "p", v),
			"hex":  runtime.CheckHex("k", "p", v, 64),
			"name": runtime.CheckName("k", "p", v, 64),
			"hmac": runtime.CheckHMAC("k", "p", runtime.HMAC(v)),
		} {
			if !errors.Is(err, runtime.ErrInvalidKeyPart) {
				t.Errorf("%s accepted %q", name, v)
				continue
			}
			if len(v) >= 3 && strings.Contains(err.Error(), v) {
				t.Errorf("%s error shows the refused value: %v", name, err)
			}
		}
	}
	if err := runtime.CheckUUID("k", "p", "0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21"); err != nil {
		t.Error(err)
	}
	if err := runtime.CheckUUID("k", "p", "0B9A1F40-6A59-4F7E-9C51-6A0B7F3A9E21"); err == nil {
		t.Error("upper-case UUID accepted: two spellings would be two keys")
	}
	if err := runtime.CheckName("k", "p", "instance-1.eu_west", 64); err != nil {
		t.Error(err)
	}
	if err := runtime.CheckInt("k", "p", 0, 1, 10); err == nil {
		t.Error("int below min accepted")
	}
}

// Input's checks of single arguments: bounds, whole milliseconds, lengths,
// the token alphabet, the boolean encoding.
func TestInputArgChecks(t *testing.T) {
	s := runtime.MustScript("s", "return 1", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", false)
	arg := func(build func(in *runtime.Input)) (any, error) {
		in := s.Input(0, 1)
		build(&in)
		if err := in.Err(); err != nil {
			return nil, err
		}
		_, args := runtime.InputParts(in)
		return args[0], nil
	}
	if _, err := arg(func(in *runtime.Input) { in.Int("a", 11, 1, 10) }); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Error("int above max")
	}
	if v, err := arg(func(in *runtime.Input) { in.Duration("a", 1500*time.Microsecond, 0, time.Second) }); err != nil || v != int64(1) {
		t.Errorf("duration encodes whole ms: %v, %v", v, err)
	}
	if _, err := arg(func(in *runtime.Input) { in.Bytes("a", make([]byte, 11), 10) }); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Error("bytes over the limit")
	}
	if _, err := arg(func(in *runtime.Input) { in.Token("a", "short") }); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Error("short token")
	}
	if v, err := arg(func(in *runtime.Input) { in.Token("a", "abcdefghijklmnop_-QRS") }); err != nil || v != "abcdefghijklmnop_-QRS" {
		t.Errorf("token: %v, %v", v, err)
	}
	for b, want := range map[bool]int64{true: 1, false: 0} {
		if v, err := arg(func(in *runtime.Input) { in.Bool(b) }); err != nil || v != want {
			t.Errorf("bool %v encodes as %v, %v", b, v, err)
		}
	}
}

// CheckHMAC takes exactly a lower-case 64-digit hex digest.
func TestCheckHMACTakesAHexDigest(t *testing.T) {
	ok := runtime.HMAC(strings.Repeat("0a", 32))
	if err := runtime.CheckHMAC("k", "p", ok); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"", strings.Repeat("0A", 32), strings.Repeat("0a", 31), strings.Repeat("0a", 33)} {
		if err := runtime.CheckHMAC("k", "p", runtime.HMAC(v)); !errors.Is(err, runtime.ErrInvalidKeyPart) {
			t.Errorf("accepted %q", v)
		}
	}
}

func TestKeyInfoMatches(t *testing.T) {
	k := runtime.KeyInfo{Glob: "shop:user:*:connections"}
	for key, want := range map[string]bool{
		"shop:user:u1:connections":   true,
		"shop:user::connections":     false,
		"shop:user:u1:x:connections": false,
		"shop:user:u1:connections:x": false,
		"shop:user:u1":               false,
		"shop:cart:u1:connections":   false,
	} {
		if got := k.Matches(key); got != want {
			t.Errorf("Matches(%q) = %v, want %v", key, got, want)
		}
	}
}
