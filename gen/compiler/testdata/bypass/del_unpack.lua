return redis.call('DEL', KEYS[1], KEYS[2], unpack(ARGV))
