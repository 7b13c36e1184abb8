package keyspec

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"}, {30 * time.Second, "30s"}, {5 * time.Minute, "5m"}, {2 * time.Hour, "2h"}, {90 * time.Minute, "1h30m"},
		{90 * time.Second, "1m30s"}, {1500 * time.Millisecond, "1.5s"}, {30 * 24 * time.Hour, "30d"}, {25 * time.Hour, "25h"},
		{3*time.Hour + 5*time.Second, "3h0m5s"}, {100 * time.Millisecond, "100ms"},
	} {
		got := FormatDuration(c.d)
		if got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", c.d, got, c.want)
		}
		if back, err := ParseDuration(got); err != nil || back != c.d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, c.d)
		}
	}
}
