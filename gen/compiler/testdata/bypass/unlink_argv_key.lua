redis.call('SET', KEYS[1], 'x', 'PX', 60000)
return redis.call('UNLINK', KEYS[2], ARGV[1])
