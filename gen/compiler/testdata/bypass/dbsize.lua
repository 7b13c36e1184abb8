local n = redis.call('DBSIZE')
redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
return n + redis.call('DEL', KEYS[2])
