redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
local bumped = tonumber(ARGV[3]) + 1
return redis.call('ZINCRBY', KEYS[1], bumped, ARGV[2])
