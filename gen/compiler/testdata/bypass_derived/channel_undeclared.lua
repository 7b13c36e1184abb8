-- A channel built by the script that no derived channel declares.
redis.call('HSET', KEYS[1], 'note', ARGV[2])
redis.call('SET', KEYS[1] .. ':lock', ARGV[1], 'PX', 60000)
redis.call('PUBLISH', 'ev:job:' .. redis.call('HGET', KEYS[1], 'id'), 'x')
return redis.call('PUBLISH', 'ev:all:' .. redis.call('HGET', KEYS[1], 'id'), 'x')
