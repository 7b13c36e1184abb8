-- idem_warm: puts back a completed record that PostgreSQL (the truth) holds, after
-- Redis lost it (eviction, FLUSHDB, an empty restore) or holds a stale or unreadable
-- copy, and drops the caller's own reservation lock (seed 000 §4, §9, §10). A
-- completed durable row never changes until it expires, so overwriting is safe.
--
-- KEYS[1] record        HASH state, fingerprint, status, response, resource_id, version
-- KEYS[2] lock          owner token
-- ARGV[1] owner         the caller's reservation token (a fresh one when it holds none)
-- ARGV[2] fingerprint
-- ARGV[3] status        HTTP status
-- ARGV[4] response      sanitized MessagePack response
-- ARGV[5] resource_id
-- ARGV[6] version       the durable row's version
-- ARGV[7] ttl           ms: what is left of the durable record's 24 h
-- Reply: replaced (1 when a record, in any state, was there)
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
end
local replaced = redis.call('EXISTS', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'completed', 'fingerprint', ARGV[2], 'status', ARGV[3],
  'response', ARGV[4], 'resource_id', ARGV[5], 'version', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return replaced
