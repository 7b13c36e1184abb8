package runtime

import (
	"strings"
	"testing"
)

// KeyPart reads a placeholder's value back out of a name, where the value ends
// at the first byte of the text after it (or the name's end, for the last).
func TestKeyPartOf(t *testing.T) {
	for _, tc := range []struct {
		part KeyPart
		name string
		want string
		ok   bool
	}{
		{KeyPart{Lits: []string{"b_", "_settings"}, Index: 0}, "b_x_y_settings", "x_y", true},
		{KeyPart{Lits: []string{"{orders:lock:", "}:expiry"}, Index: 0}, "{orders:lock:42}:expiry", "42", true},
		{KeyPart{Lits: []string{"asynq:{", "}:t:", ""}, Index: 0}, "asynq:{eu:critical}:t:0b9a", "eu:critical", true},
		{KeyPart{Lits: []string{"asynq:{", "}:t:", ""}, Index: 1}, "asynq:{eu:critical}:t:0b9a", "0b9a", true},
		{KeyPart{Lits: []string{"rate:", ""}, Index: 0}, "rate:user:42:login", "user:42:login", true},
		{KeyPart{Lits: []string{"s:", ":", ":x"}, Index: 1}, "s:a:b:x", "b", true},
		{KeyPart{Lits: []string{"s:", ":", ":x"}, Index: 1}, "s:a:b:y", "", false},
		{KeyPart{Lits: []string{"b_", "_settings"}, Index: 0}, "c_x_settings", "", false},
		{KeyPart{Lits: []string{"b_", "_settings"}, Index: 0}, "b__settings", "", false},
		{KeyPart{Lits: []string{"b_", "_settings"}, Index: 1}, "b_x_settings", "", false},
		{KeyPart{Lits: []string{"a"}, Index: 0}, "a", "", false},
	} {
		got, ok := tc.part.Of(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%+v.Of(%q) = %q %v, want %q %v", tc.part, tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// The Input calls of repeating, unused and channel positions and of shared
// placeholders inside a segment: what each appends, and what each refuses
// (naming the position, never the value).
func TestInputPositions(t *testing.T) {
	s := MustScript("positions", "return 1", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", false)
	in := s.Input(3, 3)
	in.KeyCount("locks", 2, 1, 4)
	in.Key("locks", "{l}:a")
	in.Key("locks", "{l}:b")
	in.ChannelKey("events", "ev:jobs")
	in.Unused()
	in.Const(1000)
	in.ArgCount("tags", 1, 0, 2)
	in.Channel("to", "ev:x")
	part := KeyPart{Lits: []string{"{orders:lock:", "}:owner"}, Index: 0}
	other := KeyPart{Lits: []string{"{orders:lock:", "}:expiry"}, Index: 0}
	in.SamePart("order_id", "{orders:lock:42}:owner", part, "{orders:lock:42}:expiry", other)
	if err := in.Err(); err != nil {
		t.Fatal(err)
	}
	keys, args := in.keys(), in.args()
	if len(keys) != 3 || keys[2] != "ev:jobs" || len(args) != 3 || args[0] != "" || args[1] != int64(1000) || args[2] != "ev:x" {
		t.Fatalf("keys %q args %v", keys, args)
	}
	for name, tc := range map[string]struct {
		do   func(in *Input)
		want string
	}{
		"too few keys":       {func(in *Input) { in.KeyCount("locks", 0, 1, 4) }, `KEYS locks: 0 keys, want 1..4`},
		"too many keys":      {func(in *Input) { in.KeyCount("locks", 5, 1, 4) }, `KEYS locks: 5 keys, want 1..4`},
		"too many values":    {func(in *Input) { in.ArgCount("tags", 3, 0, 2) }, `tags: 3 values, want 0..2`},
		"no channel in KEYS": {func(in *Input) { in.ChannelKey("events", "") }, `KEYS events: no key`},
		"no channel in ARGV": {func(in *Input) { in.Channel("to", "") }, `to: no channel`},
		"another order": {func(in *Input) {
			in.SamePart("order_id", "{orders:lock:42}:owner", part, "{orders:lock:43}:expiry", other)
		}, `{order_id}`},
		"not the pattern's": {func(in *Input) { in.SamePart("order_id", "{orders:lock:42}:owner", part, "x", other) }, `{order_id}`},
	} {
		in := s.Input(1, 1)
		tc.do(&in)
		if err := in.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	// On a prefixed Input a channel of another deployment is refused.
	pin := s.PrefixedInput("acme:prod:", 1, 1)
	pin.ChannelKey("events", "other:ev:jobs")
	if err := pin.Err(); err == nil || !strings.Contains(err.Error(), "another deployment prefix") {
		t.Errorf("a channel of another prefix in KEYS: %v", err)
	}
	pin = s.PrefixedInput("acme:prod:", 1, 1)
	pin.Channel("to", "other:ev:x")
	if err := pin.Err(); err == nil || !strings.Contains(err.Error(), "another deployment prefix") {
		t.Errorf("a channel of another prefix in ARGV: %v", err)
	}
}
