redis.call('SELECT', 2)
redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
return redis.call('DEL', KEYS[2])
