#!lua flags=no-writes
return redis.call('HGET', KEYS[1], 'user')
