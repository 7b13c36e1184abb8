-- A table called as a function runs its __call metamethod with what it is called with.
local del = setmetatable({}, {__call = function(_, k) return redis.call('DEL', k) end})
del(KEYS[1])
del(KEYS[2])
return del(ARGV[1])
