-- A key built from literal text that no derived key declares.
redis.call('HSET', KEYS[1], 'note', ARGV[2])
redis.call('PUBLISH', 'ev:job:1', ARGV[1])
redis.call('SET', KEYS[1] .. ':lock', ARGV[1], 'PX', 60000)
return redis.call('DEL', 't:job:' .. redis.call('HGET', KEYS[1], 'id'))
