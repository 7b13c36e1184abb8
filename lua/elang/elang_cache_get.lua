#!lua flags=no-writes
-- elang_cache_get: reads one cache entry (Elang Redis doc, seed 003: cache).
--
-- KEYS[1] entry         string
-- Reply: the value, or nil when there is none
return redis.call('GET', KEYS[1])
