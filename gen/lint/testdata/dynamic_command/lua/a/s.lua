return redis.call(ARGV[1], KEYS[1])
