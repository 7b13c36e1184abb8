-- ARGV used in arithmetic and passed through as text (an id, a score).
local limit = tonumber(ARGV[1])
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + 1 > limit then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return redis.call('INCRBY', KEYS[1], 1)
