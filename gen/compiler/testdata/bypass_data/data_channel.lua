-- A channel whose name is read from data: from data declares keys only.
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', KEYS[1])
redis.call('PEXPIRE', KEYS[2], 1000)
redis.call('PUBLISH', ARGV[2], ARGV[1])
return redis.call('PUBLISH', parent, ARGV[1])
