-- elang_cache_delete: deletes one cache entry (Elang Redis doc, seed 003: cache).
--
-- KEYS[1] entry         string
-- Reply: 1 when there was an entry, else 0
return redis.call('DEL', KEYS[1])
