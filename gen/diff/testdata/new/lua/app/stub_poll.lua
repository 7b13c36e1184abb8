return redis.call('GETRANGE', KEYS[1], 0, -1)
