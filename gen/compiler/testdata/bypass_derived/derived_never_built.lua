-- Declares a derived lock and channel it never builds.
redis.call('HSET', KEYS[1], 'note', ARGV[2])
return #ARGV[1]
