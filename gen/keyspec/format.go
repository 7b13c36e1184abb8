package keyspec

import (
	"fmt"
	"strings"
	"time"
)

// FormatDuration writes a duration as a spec writes it, ParseDuration's
// inverse: whole days as "30d", else Go's form without its zero minutes and
// seconds ("2h", "5m", "1h30m", "1m30s", "1.5s"); 0 is "0".
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String() // 24h0m0s, 5m0s, 1h30m0s, 1.5s
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
