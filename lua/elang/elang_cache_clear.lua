-- elang_cache_clear: retires every cache entry of the deployment at once (Elang
-- Redis doc, seed 003: a clear touches only this application's namespace). The
-- generation becomes ARGV[1]: no entry written before reads any more, and none
-- is listed or deleted (no SCAN: it would list every deployment's key names).
-- The retired entries stay until their TTLs.
--
-- KEYS[1] generation      string
-- ARGV[1] fresh           the new generation
-- ARGV[2] generation_ttl  ms
-- Reply: 1
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
