// Package safety is Message Safety's side of its own Redis (instance vm2, seed 004):
// hot caches, caller rate limits and the worker wake-up, built on the generated vm2
// scripts. Redis here is an accelerator, never a source of truth: PostgreSQL holds
// every task and lease, so this package stores none and names nothing of VM1.
//
// A Client runs every call with a timeout of its own and notices when Redis is
// unreachable (seed 004 §6). While it is, cache reads are misses, cache writes and
// wake-ups are dropped and counted, and each rate-limited caller gets the policy the
// service chose for it: fail-closed, or fail-open through a bounded local limiter.
// No call waits for Redis longer than its timeout (or its caller's deadline: a call
// Redis has not answered by either is an outage), calls stuck on a hung connection
// are bounded (Options.MaxInFlight), and only one call per RetryInterval tries
// Redis again; the first answer ends the degraded mode and the
// caches warm again lazily, as callers set what they compute. Health reports Redis
// as degraded, never as down: it is not a readiness gate.
//
// Cache values are typed MessagePack records (TextResult, FileVerdict, LinkPolicy,
// DNSAnswer) holding rule ids, verdicts, classifications and DNS answers, each
// validated and size-limited on the way in and on the way out. No record has a field
// for raw message text, file bytes, presigned URLs or task and lease documents, and a
// string that looks like one (a URL with a signature query, free text) is refused.
// Every entry carries the active config generation as its version stamp: a write
// stamped older than the stored entry never replaces it, and a read by any other
// generation is a miss. TTLs come from the active Policy, clamped to each key's
// maximum in keyspec.yaml; a DNS answer keeps its own TTL, capped at 900 s.
//
// The task queue is PostgreSQL's (TaskQueue, table safety_tasks from
// TaskMigration): a Worker claims tasks with FOR UPDATE SKIP LOCKED under a lease
// whose generation fences every completion, and polls every PollInterval (bounded:
// it cannot be switched off). A wake-up on han:safety:wakeup only ends a worker's
// wait early, so a Redis outage slows the claim by one poll interval at most and
// never stops it (seed 004 §6, §8).
//
// Metrics (Prometheus, on the Registerer the caller passes) count cache hits and
// misses by kind, TTL caps, wake-up subscribers and rate-limit decisions by caller.
// Their labels take values from fixed sets and the configured caller names only:
// never a hash, a value, a text or a secret.
package safety
