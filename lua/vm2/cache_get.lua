#!lua flags=no-writes
-- cache_get: reads a cache entry (seed 004 §3, §4); an entry stamped other than
-- the active stamp is a miss.
--
-- KEYS[1] entry         HASH stamp, value
-- ARGV[1] stamp         active config generation
-- Reply: {hit, value, stored_stamp}
local entry = redis.call('HMGET', KEYS[1], 'stamp', 'value')
if not entry[1] then
  return {0, false, 0}
end
local stored = tonumber(entry[1])
if stored ~= tonumber(ARGV[1]) then
  return {0, false, stored}
end
return {1, entry[2], stored}
