redis.pcall('SCRIPT', 'FLUSH')
return redis.call('DEL', KEYS[1], KEYS[2]) + #ARGV[1]
