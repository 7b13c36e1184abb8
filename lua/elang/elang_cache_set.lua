-- elang_cache_set: stores one cache entry for ttl (Elang Redis doc, seed 003:
-- cache), as "<generation>:<value>" under the deployment's current generation,
-- which it starts (ARGV[3]) when there is none and renews either way, so the
-- generation outlives every entry written under it.
--
-- KEYS[1] entry           string "<generation>:<value>"
-- KEYS[2] generation      string
-- ARGV[1] value
-- ARGV[2] ttl             ms
-- ARGV[3] fresh           the generation to start when there is none
-- ARGV[4] generation_ttl  ms
-- Reply: 1
local generation = redis.call('GET', KEYS[2]) or ARGV[3]
redis.call('SET', KEYS[2], generation, 'PX', ARGV[4])
redis.call('SET', KEYS[1], generation .. ':' .. ARGV[1], 'PX', ARGV[2])
return 1
