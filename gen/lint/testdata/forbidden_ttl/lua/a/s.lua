#!lua flags=no-writes
return redis.call('LLEN', KEYS[1])
