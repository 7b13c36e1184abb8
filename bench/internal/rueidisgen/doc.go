// Package rueidisgen holds HAN's vm1 wrappers generated for rueidis
// (luagen generate --client rueidis), so the benchmarks compare the typed API
// over each client in one run.
package rueidisgen

//go:generate go run -C ../../.. ./cmd/luagen generate --out bench/internal/rueidisgen --instance vm1 --client rueidis
