-- A variadic helper: its ... are exactly what each call passes.
local function del(...) return redis.call('DEL', ...) end
local function count(...) return select('#', ...) end
del(KEYS[1], KEYS[2])
return count(KEYS[1], ARGV[1]) + del(KEYS[3])
