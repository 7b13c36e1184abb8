-- cache_set: atomic cache set with TTL and version stamp (seed 004 §3, §4). The
-- TTL is clamped to max_ttl; a value stamped older than the stored one never
-- overwrites it (the same stamp refreshes).
--
-- KEYS[1] entry         HASH stamp, value
-- ARGV[1] value         MessagePack record
-- ARGV[2] stamp         active config generation
-- ARGV[3] ttl           ms, from the active config
-- ARGV[4] max_ttl       ms, the key's cap from the spec
-- Reply: {written, capped, stamp stored after the call}
local stamp = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local max_ttl = tonumber(ARGV[4])
local capped = 0
if ttl > max_ttl then
  ttl = max_ttl
  capped = 1
end
-- A missing stamp, or one that is not a number (a damaged entry), counts as 0,
-- so any set repairs the entry.
local current = tonumber(redis.call('HGET', KEYS[1], 'stamp')) or 0
if current > stamp then
  return {0, capped, current}
end
redis.call('HSET', KEYS[1], 'stamp', ARGV[2], 'value', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, capped, stamp}
