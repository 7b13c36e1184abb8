-- A helper that returns redis.call; the result is called with an argument.
local function caller() return redis.call end
caller()('DEL', KEYS[1], KEYS[2])
return caller()('DEL', ARGV[1])
