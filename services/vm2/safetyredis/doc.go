// Package safetyredis is Message Safety's connection to its own Redis
// (instance vm2, seed 004): the Client every hot path of the service runs
// through. Redis here is an accelerator, never a source of truth: PostgreSQL
// holds every task and lease, so nothing built on this package stores one, and
// it names nothing of VM1.
//
// A Client runs every call (Do) with a timeout of its own and notices when
// Redis is unreachable (seed 004 §6). While it is, calls return ErrUnavailable
// at once and each hot path answers by its own policy: cache reads are misses
// and writes are dropped (safetycache), wake-ups are dropped (waker), and each
// rate-limited caller gets the policy the service chose for it (callerlimit).
// No call waits for Redis longer than its timeout (or its caller's deadline: a
// call Redis has not answered by either is an outage), calls stuck on a hung
// connection are bounded (Options.MaxInFlight), and only one call per
// RetryInterval tries Redis again; the first answer ends the degraded mode.
// Health reports Redis as degraded, never as down: it is not a readiness gate.
//
// The service's other parts, one package each under services/vm2:
// safetyrecord (the values it keeps in Redis), safetycache (the hot caches),
// callerlimit (its callers' rate limits), waker (the worker wake-up), taskqueue
// (the PostgreSQL task queue) and worker (the claim loop).
//
// Metrics (Prometheus, on Options.Registerer, shared by everything built on
// the Client) take label values from fixed sets and the configured caller
// names only: never a hash, a value, a text or a secret. This package's own:
// han_safety_redis_degraded and han_safety_redis_degradations_total.
package safetyredis
