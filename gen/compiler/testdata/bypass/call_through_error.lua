-- redis.call thrown as an error object and caught again.
local ok, call = pcall(error, redis.call)
redis.call('DEL', KEYS[1], KEYS[2])
return call('DEL', ARGV[1])
