redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
return redis.call('DEL', KEYS[2], 't:00000000-0000-0000-0000-000000000000')
