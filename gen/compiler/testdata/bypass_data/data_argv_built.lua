-- A name built on an ARGV is not data either.
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], 1000)
return redis.call('DEL', ARGV[1] .. ':deps')
