#!lua flags=no-writes
return redis.call('XLEN', KEYS[1])
