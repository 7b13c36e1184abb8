package sizing_test

import (
	"math"
	"testing"

	"github.com/hanchat/luagen/gen/sizing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "1k": 1000, "1kb": 1024, "4gb": 4 << 30, "2m": 2e6, "16MB": 16 << 20, "7b": 7} {
		if got, err := sizing.ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "gb", "-1", "1tb", "1.5gb", "99999999999gb"} {
		if _, err := sizing.ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
	if math.MaxInt64 < 0 {
		t.Fatal("unreachable")
	}
}
