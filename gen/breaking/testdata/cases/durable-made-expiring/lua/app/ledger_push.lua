local n = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -100, -1)
redis.call('PEXPIRE', KEYS[1], 2592000000)
return math.min(n, 100)
