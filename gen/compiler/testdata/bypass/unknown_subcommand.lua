redis.call('SCRIPT', 'NOPE')
return redis.call('DEL', KEYS[1], KEYS[2]) + #ARGV[1]
