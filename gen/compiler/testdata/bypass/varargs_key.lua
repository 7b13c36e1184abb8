-- A variadic helper passes all its arguments on as keys.
local function del(...) return redis.call('DEL', ...) end
return del(KEYS[1], KEYS[2], ARGV[1])
