redis.call('FLUSHALL')
return redis.call('DEL', KEYS[1], KEYS[2]) + #ARGV[1]
