redis.call('EVALSHA', ARGV[1], 1, KEYS[1])
return redis.call('DEL', KEYS[2])
