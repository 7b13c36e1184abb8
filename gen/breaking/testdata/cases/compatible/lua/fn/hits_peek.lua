#!lua flags=no-writes
return tonumber(redis.call('GET', KEYS[1]) or '0')
