return redis.call('EXISTS', KEYS[1], KEYS[2])
