redis.call('XYZZY', KEYS[1], ARGV[1])
return redis.call('DEL', KEYS[2])
