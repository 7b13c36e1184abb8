-- A lock built from an argument that is not declared a key: any name.
redis.call('HSET', KEYS[1], 'note', ARGV[2])
redis.call('PUBLISH', 'ev:job:' .. redis.call('HGET', KEYS[1], 'id'), 'x')
redis.call('SET', KEYS[1] .. ':lock', ARGV[1], 'PX', 60000)
return redis.call('DEL', ARGV[2] .. ':lock')
