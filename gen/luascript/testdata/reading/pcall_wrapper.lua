-- redis.call through pcall, and a helper that wraps it.
local ok, err = pcall(redis.call, 'INCR', KEYS[1])
local function safe(...) return pcall(redis.call, ...) end
safe('PEXPIRE', KEYS[1], 60000)
return ok and 1 or 0
