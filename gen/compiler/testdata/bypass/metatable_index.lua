-- Reads of a table with a metatable answer what its __index says.
local names = setmetatable({}, {__index = function(_, k) return ARGV[1] end})
redis.call('PEXPIRE', KEYS[1], 60000)
return redis.call('DEL', names.victim, KEYS[2])
