local clients = redis.call('CLIENT', 'LIST')
redis.call('SET', KEYS[1], clients, 'PX', 60000)
return redis.call('DEL', KEYS[2]) + #ARGV[1]
