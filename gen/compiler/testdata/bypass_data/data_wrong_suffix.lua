-- A name read from data with an ending no key from data has.
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('PUBLISH', ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], 1000)
return redis.call('DEL', parent .. ':lock')
