-- A helper kept in a table, replaced before it is called.
local ops = {del = function(k) return redis.call('DEL', k) end}
ops.del = function(k) return redis.call('DEL', ARGV[1]) end
ops.del(KEYS[2])
return ops.del(KEYS[1])
