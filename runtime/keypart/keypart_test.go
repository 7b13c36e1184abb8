package keypart

import (
	"strings"
	"testing"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   func(string) bool
		good []string
		bad  []string
	}{
		{"UUID", UUID, []string{"0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e21"},
			[]string{"", "0B9A1F40-6A59-4F7E-9C51-6A0B7F3A9E21", "0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e2", "0b9a1f40_6a59-4f7e-9c51-6a0b7f3a9e21", "0b9a1f40-6a59-4f7e-9c51-6a0b7f3a9e2:"}},
		{"Hex 4", func(s string) bool { return Hex(s, 4) }, []string{"00af"}, []string{"", "00AF", "00a", "00afa", "0g00", "00:f"}},
		{"Name 8", func(s string) bool { return Name(s, 8) }, []string{"a", "Ab.9_-", "12345678"},
			[]string{"", "123456789", "a:b", "a*", "a?", "a[1]", "{a}", "a b", "a\tb", "é"}},
		{"Path 12", func(s string) bool { return Path(s, 12) }, []string{"a", "user:42", "a:b.c:d-e_f", "123456789012"},
			[]string{"", ":a", "a:", "a::b", "1234567890123", "a*", "a:{b}", "a b", "a:b?", "é"}},
		{"Token", Token, []string{strings.Repeat("a", 16), "abcDEF012_-xyzXYZ", strings.Repeat("Z", 128)},
			[]string{strings.Repeat("a", 15), strings.Repeat("a", 129), strings.Repeat("a", 15) + ":", strings.Repeat("a", 16) + "="}},
	} {
		for _, s := range tc.good {
			if !tc.ok(s) {
				t.Errorf("%s refused %q", tc.name, s)
			}
		}
		for _, s := range tc.bad {
			if tc.ok(s) {
				t.Errorf("%s accepted %q", tc.name, s)
			}
		}
	}
}

func TestDigests(t *testing.T) {
	if got := SHA256("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("SHA256 = %s", got)
	}
	if got := EnumHash("abc"); got != "ba7816bf8f01cfea" || !Hex(got, 16) {
		t.Fatalf("EnumHash = %s", got)
	}
}
