redis.call('SET', KEYS[1], 'x', 'PX', 60000)
return redis.call('DEL', KEYS[2], ARGV[1])
