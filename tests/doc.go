// Package tests holds end-to-end tests: the generated wrappers against real
// redis-server processes the tests start on free loopback ports, and conformance
// tests that run one scenario on the gopher-lua harness and on Redis and compare
// the replies and the resulting keyspace.
package tests
