redis.call(ARGV[1], KEYS[1])
return redis.call('DEL', KEYS[2])
