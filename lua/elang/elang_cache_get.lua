#!lua flags=no-writes
-- elang_cache_get: reads one cache entry (Elang Redis doc, seed 003: cache).
-- An entry is "<generation>:<value>" and reads only while its generation is the
-- deployment's current one: elang_cache_clear retires them all at once.
--
-- KEYS[1] entry         string "<generation>:<value>"
-- KEYS[2] generation    string, the current generation
-- Reply: the value, or nil when there is none or it is of a retired generation
local generation = redis.call('GET', KEYS[2])
if not generation then
  return false
end
local stored = redis.call('GET', KEYS[1])
if not stored then
  return false
end
local head = generation .. ':'
if string.sub(stored, 1, #head) ~= head then
  return false
end
return string.sub(stored, #head + 1)
