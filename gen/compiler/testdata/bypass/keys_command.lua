local all = redis.call('KEYS', '*')
return redis.call('DEL', KEYS[1], KEYS[2]) + #all + #ARGV[1]
