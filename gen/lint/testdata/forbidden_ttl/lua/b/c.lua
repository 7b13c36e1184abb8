#!lua flags=no-writes
return redis.call('HLEN', KEYS[1]) + redis.call('LLEN', KEYS[2])
