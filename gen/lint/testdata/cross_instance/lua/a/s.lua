-- mirrors other:cache:* of b
return redis.call('EXISTS', KEYS[1])
