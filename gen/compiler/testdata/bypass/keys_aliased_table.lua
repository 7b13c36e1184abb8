local keys = KEYS
keys[2] = ARGV[1]
return redis.call('DEL', KEYS[1], KEYS[2])
