redis.call('FLUSHDB')
return redis.call('EXISTS', KEYS[1])
