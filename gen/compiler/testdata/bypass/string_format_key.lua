-- A key built with string.format from an argument.
redis.call('DEL', KEYS[1], KEYS[2])
return redis.call('DEL', string.format('t:%s', ARGV[1]))
