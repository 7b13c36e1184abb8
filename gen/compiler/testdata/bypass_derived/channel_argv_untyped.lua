-- A channel whose placeholder is filled by an argument of another type.
redis.call('HSET', KEYS[1], 'note', ARGV[2])
redis.call('SET', KEYS[1] .. ':lock', ARGV[1], 'PX', 60000)
return redis.call('PUBLISH', 'ev:job:' .. ARGV[2], 'x')
