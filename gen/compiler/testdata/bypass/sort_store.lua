redis.call('SORT', KEYS[1], 'BY', 'nosort', 'STORE', ARGV[1])
return redis.call('DEL', KEYS[2])
