package runtime

import "testing"

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
