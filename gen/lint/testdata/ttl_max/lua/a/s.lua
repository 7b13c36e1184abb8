#!lua flags=no-writes
return redis.call('EXISTS', KEYS[1])
