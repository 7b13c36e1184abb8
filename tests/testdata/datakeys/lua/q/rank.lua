return redis.call('ZADD', KEYS[1], 1, ARGV[1])
