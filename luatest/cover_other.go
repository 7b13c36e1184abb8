//go:build !unix

package luatest

import "errors"

// mapCounters needs memory-mapped files, which luatest uses on unix only.
func mapCounters(path string, n int) ([]uint64, error) {
	return nil, errors.New(CoverEnv + " needs a unix system (coverage counters are memory-mapped files)")
}
