-- elang_cache_set: stores one cache entry for ttl (Elang Redis doc, seed 003: cache).
--
-- KEYS[1] entry         string
-- ARGV[1] value
-- ARGV[2] ttl           ms
-- Reply: 1
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
