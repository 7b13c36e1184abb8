-- redis.call itself handed to a coroutine.
local call = coroutine.wrap(redis.call)
redis.call('DEL', KEYS[1], KEYS[2])
return call('DEL', ARGV[1])
