redis.call('SELECT', 1)
return redis.call('EXISTS', KEYS[1])
