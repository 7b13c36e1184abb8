return redis.call('HGET', KEYS[1], 'user')
