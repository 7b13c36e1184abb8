redis.call('MOVE', KEYS[1], 2)
return redis.call('DEL', KEYS[2]) + #ARGV[1]
