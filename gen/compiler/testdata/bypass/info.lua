local info = redis.call('INFO')
redis.call('SET', KEYS[1], info, 'PX', 60000)
return redis.call('DEL', KEYS[2]) + #ARGV[1]
