-- Declares a derived lock and channel it never builds.
redis.call('HSET', KEYS[1], 'note', ARGV[2])
return redis.call('PEXPIRE', KEYS[1], #ARGV[1])
