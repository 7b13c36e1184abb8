// Package jwks remembers, for 30 s from the first miss, that a JWT's key id was
// not found in the JWKS (seed 000 §3: han:api:jwks:negative:{kid_hash}), so a
// flood of tokens naming unknown kids does not refetch the JWKS for each one,
// while a kid that appears in the JWKS later is found within 30 s. The kid
// enters Redis only as its SHA-256.
package jwks

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/hanchat/luagen/generated/vm1"
)

// MaxKIDBytes bounds a kid: anything longer is refused before it is hashed.
const MaxKIDBytes = 256

// ErrInvalidKID: an empty kid, or one above MaxKIDBytes.
var ErrInvalidKID = errors.New("invalid JWT kid")

// NegativeCache marks and checks kids the JWKS does not hold. It is safe for
// concurrent use.
type NegativeCache struct {
	scripts *vm1.Scripts
}

// New returns a NegativeCache running vm1's scripts, which need a DB0 client
// (without one, every call fails with runtime.ErrNoClient).
func New(scripts *vm1.Scripts) *NegativeCache {
	return &NegativeCache{scripts: cmp.Or(scripts, &vm1.Scripts{})}
}

func checkKID(kid string) error {
	if kid == "" || len(kid) > MaxKIDBytes {
		return fmt.Errorf("jwks: kid of %d bytes, want 1..%d: %w", len(kid), MaxKIDBytes, ErrInvalidKID)
	}
	return nil
}

// MarkMissing records that kid was not found, for vm1.APIJWKSNegativeTTL (30 s)
// from now; created is false when a marker was already there, and then its TTL
// is left as it is: a marker ends 30 s after the first miss however often the
// kid is marked again, so a kid that keeps coming (an attacker's, or a key
// rotated in meanwhile) is looked up in the JWKS again every 30 s.
func (c *NegativeCache) MarkMissing(ctx context.Context, kid string) (created bool, err error) {
	if err := checkKID(kid); err != nil {
		return false, err
	}
	created, err = c.scripts.JWKSNegativeMark(ctx, vm1.NewAPIJWKSNegativeKey(kid))
	if err != nil {
		return false, fmt.Errorf("jwks: mark missing kid: %w", err)
	}
	return created, nil
}

// KnownMissing reports whether kid was marked missing within the last 30 s. An
// error (Redis down) is returned as such, not read as "not missing": the caller
// chooses between refetching the JWKS and refusing the token.
func (c *NegativeCache) KnownMissing(ctx context.Context, kid string) (bool, error) {
	if err := checkKID(kid); err != nil {
		return false, err
	}
	present, err := c.scripts.JWKSNegativeCheck(ctx, vm1.NewAPIJWKSNegativeKey(kid))
	if err != nil {
		return false, fmt.Errorf("jwks: check missing kid: %w", err)
	}
	return present, nil
}
