// Package promreg registers Prometheus collectors the one way every package of
// this module does: a collector already registered under the same description
// (another instance of the same component in one process) is reused, so the
// instances count together, and nothing panics.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers *c on reg. When reg holds an equal collector already
// (prometheus.AlreadyRegisteredError) of c's type, *c becomes that one. Any
// other refusal (a collector of another type, or of other labels or help,
// under one of c's names) is returned, and *c is left as it was: counted, but
// exported nowhere. A nil reg registers nothing.
func Register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	if reg == nil {
		return nil
	}
	err := reg.Register(*c)
	if err == nil {
		return nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			*c = existing
			return nil
		}
	}
	return err
}
