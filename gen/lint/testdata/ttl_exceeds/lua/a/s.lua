return redis.call('EXISTS', KEYS[1])
