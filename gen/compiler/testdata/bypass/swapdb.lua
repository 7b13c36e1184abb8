redis.call('SWAPDB', 0, 2)
return redis.call('DEL', KEYS[1], KEYS[2]) + #ARGV[1]
