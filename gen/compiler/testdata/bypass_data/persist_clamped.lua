-- PERSIST of a lock whose clamped TTL does not declare persist.
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[1])
return redis.call('PERSIST', KEYS[2])
