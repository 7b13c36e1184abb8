#!lua flags=no-writes
-- cache_get: reads a cache entry (seed 004 §3, §4); an entry stamped other than
-- the active stamp is a miss. A hit also reports the entry's remaining TTL, so a
-- cached DNS answer is served with what is left of its own TTL.
--
-- KEYS[1] entry         HASH stamp, value
-- ARGV[1] stamp         active config generation
-- Reply: {hit, value, stored_stamp, ttl_ms}
local entry = redis.call('HMGET', KEYS[1], 'stamp', 'value')
if not entry[1] then
  return {0, false, 0, 0}
end
-- A stamp that is not a number (the entry was damaged) reads as absent.
local stored = tonumber(entry[1]) or 0
if stored ~= tonumber(ARGV[1]) then
  return {0, false, stored, 0}
end
return {1, entry[2], stored, redis.call('PTTL', KEYS[1])}
