n = redis.call('EXISTS', KEYS[1])
return n + missing
