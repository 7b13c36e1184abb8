package runtime

import (
	"fmt"
	"strings"
	"time"
)

// ErrNoClient: a wrapper was called for a database its Scripts value has no client for.
var ErrNoClient = fmt.Errorf("no client for the script's database")

// KeyInfo describes one declared key pattern, for audits such as a keyspace scan
// that checks every key is declared and has a TTL.
type KeyInfo struct {
	Name      string        // the key's name in keyspec.yaml
	Pattern   string        // e.g. shop:cart:{user_id}
	Glob      string        // e.g. shop:cart:*
	DB        int           // database index
	Kind      string        // rate_limit, lock, cache, ...
	TTLRule   string        // fixed, window_jitter, heartbeat, clamped or none
	TTL       time.Duration // fixed and heartbeat: the TTL
	MaxJitter time.Duration // window_jitter: the most added to the window
	MaxTTL    time.Duration // the declared cap: clamped, the bound of every TTL; fixed and heartbeat, the max TTL can be (0: none)
}

// Matches reports whether key has the pattern's shape: the same ':'-separated
// segments, each placeholder matching one non-empty segment ("{...}" for one in a
// hash tag). On an instance with a deployment prefix, Pattern and Glob follow the
// prefix: strip it from key first.
func (k KeyInfo) Matches(key string) bool {
	g := k.Glob
	for {
		gs, grest, gmore := strings.Cut(g, ":")
		ks, krest, kmore := strings.Cut(key, ":")
		switch gs {
		case "*":
			if ks == "" {
				return false
			}
		case "{*}": // a placeholder in a hash tag
			if len(ks) < 3 || ks[0] != '{' || ks[len(ks)-1] != '}' {
				return false
			}
		default:
			if gs != ks {
				return false
			}
		}
		if !gmore || !kmore {
			return gmore == kmore
		}
		g, key = grest, krest
	}
}
