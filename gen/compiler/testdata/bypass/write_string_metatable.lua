-- The strings' metatable is Redis's; writing into it is out of the reading's sight.
getmetatable('').__index.lock = function(s) return redis.call('DEL', s) end
redis.call('DEL', KEYS[1], KEYS[2])
return (ARGV[1]):lock()
