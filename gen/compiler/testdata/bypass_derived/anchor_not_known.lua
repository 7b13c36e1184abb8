-- Built from KEYS[i] with i chosen by an argument.
redis.call('HSET', KEYS[1], 'note', ARGV[2])
redis.call('PUBLISH', 'ev:job:1', ARGV[1])
redis.call('SET', KEYS[1] .. ':lock', ARGV[1], 'PX', 60000)
return redis.call('DEL', KEYS[tonumber(ARGV[2])] .. ':lock')
