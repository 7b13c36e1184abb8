-- redis.call through pcall: the same call, the same keys.
local ok = pcall(redis.call, 'DEL', KEYS[1], KEYS[2])
return pcall(redis.call, 'DEL', ARGV[1])
